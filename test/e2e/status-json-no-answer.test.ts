// `status --json` keeps stdout JSON when no server answers: a monitor that parses it gets
// `{"healthy":false,"error":…}` and exit 1, never an empty document. The process boundary
// (stdout, exit code) is the subject, so the built CLI is run.
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { runToEnd } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 60_000;

/** An environment with no server anywhere: its own state dir and runtime folder, nothing in them. */
function nowhere(): NodeJS.ProcessEnv {
  return { ...process.env, HERRSCHER_STATE_DIR: tempDir('hs-st-'), XDG_RUNTIME_DIR: tempDir('hs-run-'), HERRSCHER_STATE_SOCKET: undefined };
}

test('status --json with no server at all prints {"healthy":false,"error":…} on stdout and exits 1', { timeout: TIMEOUT }, async () => {
  const env = nowhere();
  const [plain, named] = await Promise.all([
    runToEnd(['status', '--json'], { env }),
    runToEnd(['status', '--json', '--state', path.join(tempDir('hs-other-'), 'state.json')], { env }),
  ]);
  for (const got of [plain, named]) {
    assert.equal(got.code, 1, got.stderr);
    const said = JSON.parse(got.stdout) as Record<string, unknown>;
    assert.deepEqual(Object.keys(said), ['healthy', 'error']);
    assert.equal(said.healthy, false);
    assert.match(String(said.error), /no server/);
    assert.match(got.stderr, /^herrscher-state status: no server/, 'stderr still says why, for a person');
  }
  assert.match(String((JSON.parse(named.stdout) as { error: string }).error), /no server for .*state\.json/);
  // Without --json stdout stays empty: the human form has no "no answer" document.
  const human = await runToEnd(['status'], { env });
  assert.deepEqual([human.code, human.stdout], [1, '']);
});

test('status --json --timeout against a server that never answers prints the JSON verdict too', { timeout: TIMEOUT }, async (t) => {
  const socket = path.join(tempDir(), 'mute.sock');
  const held: net.Socket[] = [];
  const mute = net.createServer((s) => void held.push(s)); // accepts, reads, never writes
  await new Promise<void>((resolve) => mute.listen(socket, resolve));
  t.after(() => {
    for (const s of held) s.destroy();
    mute.close();
  });
  const got = await runToEnd(['status', '--json', '--socket', socket, '--timeout', '300'], { env: { ...process.env, HERRSCHER_STATE_REPLY_TIMEOUT_MS: undefined } });
  assert.equal(got.code, 1, got.stderr);
  assert.deepEqual(JSON.parse(got.stdout), { healthy: false, error: 'no reply within 300 ms (--timeout 300 bounds the whole request)' });
});
