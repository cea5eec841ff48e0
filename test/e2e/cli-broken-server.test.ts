// The client commands against a broken server (test/fixtures/fake-server.mjs): status, call and
// socket exit 1 with a message, never hang, whether the server never answers (bounded by
// $HERRSCHER_STATE_REPLY_TIMEOUT_MS), speaks garbage or hangs up mid-reply.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { privateRuntimeDir, runToEnd } from '../helpers/cli.js';
import type { FakeMode } from '../helpers/fake-server.js';
import { fakeServerSocket } from '../helpers/fake-server.js';
import { TIMEOUT } from '../helpers/feed.js';

/**
 * The reply bound is short only where the wait for it is the subject (a silent server); against a
 * server that answers wrongly it stays long, so a loaded machine cannot turn the error the test
 * expects into a timeout (a hang would still fail: the timeout's message is not the one expected).
 */
const env = (mode: FakeMode): NodeJS.ProcessEnv => ({
  ...process.env,
  HERRSCHER_STATE_DIR: undefined,
  HERRSCHER_STATE_SOCKET: undefined,
  XDG_RUNTIME_DIR: privateRuntimeDir(),
  HERRSCHER_STATE_REPLY_TIMEOUT_MS: mode === 'silent' ? '300' : '20000',
});

const cases: [FakeMode, RegExp][] = [
  ['silent', /no reply within 300 ms/],
  ['garbage', /broke the protocol/],
  ['close-mid-reply', /closed the connection|broke the protocol/],
];

for (const [mode, says] of cases) {
  test(`status, call and socket exit 1 with a message against a server whose reply is ${mode}`, { timeout: TIMEOUT }, async () => {
    const socket = await fakeServerSocket(mode);
    // The three commands at once: each its own connection to the fake server, which answers each
    // the same way; the wait is the commands' (their start, a silent server's reply bound).
    const commands = [['status'], ['call', 'session/list'], ['socket']];
    const results = await Promise.all(commands.map((args) => runToEnd([...args, '--socket', socket], { env: env(mode) })));
    for (const [i, got] of results.entries()) {
      const args = commands[i] as string[];
      assert.equal(got.code, 1, `${args.join(' ')}: ${got.stderr}`);
      assert.equal(got.stdout, '');
      assert.match(got.stderr, says, args.join(' '));
    }
  });
}
