// `serve --exit-when-idle MS`: a server started for a process that does not hold the lock stops in
// order, and releases the lock, once no connection has been open and no request in flight for MS.
// An open connection, and a request still being answered after its client left, keep it alive.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { UsageError } from '../../src/commands/command.js';
import { parseCommandLine } from '../../src/commands/command-line.js';
import { serveCommand } from '../../src/commands/serve-command.js';
import { IdleWatch } from '../../src/server/idle-watch.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { Store } from '../../src/store/store.js';
import { runToEnd, serveSocket } from '../helpers/cli.js';
import { startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 60_000;

/** Resolves true once `done()` holds, false after `ms`. */
async function within(ms: number, done: () => boolean): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (done()) return true;
    await sleep(20);
  }
  return done();
}

// The three side by side (each its own folder and server): they mostly wait, on purpose.
describe('exit-when-idle', { concurrency: true }, () => {
  test('an open connection and a request in flight after its client left keep the server from being idle', { timeout: TIMEOUT }, async (t) => {
    let idleCalls = 0;
    const watch = new IdleWatch(100, () => idleCalls++);
    // Writes of state.json wait for `release`, so a request stays in flight as long as the test wants.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let writing = false;
    const io = withIo({
      writeAtomic: async (...args) => {
        writing = true;
        await released;
        return nodeIo.writeAtomic(...args);
      },
    });
    const srv = await startServer(t, { presence: watch, store: { io } });
    t.after(() => watch.stop());
    watch.start();
    const raw = await srv.raw('ndjson');
    await sleep(300);
    assert.equal(idleCalls, 0, 'an open connection, even a quiet one, is a user');
    const id = raw.send('session/add', { session: { name: 'a' } });
    assert.ok(await within(5000, () => writing), 'the write started');
    raw.end();
    await sleep(300);
    assert.equal(idleCalls, 0, 'the client left, but its request is still in flight');
    release();
    assert.equal((await raw.response(id)).error, undefined, 'the request was answered');
    assert.ok(await within(5000, () => idleCalls === 1), 'idle once the answer went out and the wait passed');
    await srv.close();
  });

  test('serve --exit-when-idle 300 stays while a client is connected, then exits 0 and releases the lock', { timeout: TIMEOUT }, async (t) => {
    const dir = tempDir();
    const state = statePathIn(dir);
    const server = await serveSocket(t, state, `${dir}/s.sock`, ['--exit-when-idle', '300', '--log-format', 'json']);
    let exitedAt = 0;
    void server.exited.then(() => (exitedAt = Date.now()));
    const raw = await server.connect('ndjson');
    assert.equal((await raw.request('session/add', { session: { name: 'a' } })).error, undefined);
    await sleep(900);
    assert.equal(exitedAt, 0, 'still serving while the connection is open');
    const left = Date.now();
    raw.end();
    const exit = await server.exited;
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.ok(exitedAt - left >= 300, `exited ${exitedAt - left} ms after the client left, before the idle time`);
    const errors = server.stderr().split('\n').filter((l) => l.startsWith('{') && (JSON.parse(l) as { level: number }).level >= 50);
    assert.deepEqual(errors, []);
    // The lock went with it: the next owner opens the state dir, and finds the write.
    const next = await Store.open(state);
    try {
      assert.equal(next.findSession('a')?.name, 'a');
    } finally {
      await next.close();
    }
  });

  test('serve --exit-when-idle refuses a value that is not a whole number of milliseconds', { timeout: TIMEOUT }, async () => {
    // What the operator sees, once through the built CLI: the message and exit 2 (a command line error).
    const dir = tempDir();
    const out = await runToEnd(['serve', '--state', statePathIn(dir), '--socket', `${dir}/s.sock`, '--exit-when-idle=abc']);
    assert.equal(out.code, 2, `--exit-when-idle abc: ${out.stderr}`);
    assert.match(out.stderr, /--exit-when-idle must be a whole number of milliseconds/);
    // Every value through the command's own parse and checks, in this process. A bad --log-format
    // after it keeps a value wrongly accepted from starting a server here: that fails on the message.
    for (const bad of ['abc', '0', '-5', '1.5', '99999999999']) {
      const { flags, positionals } = parseCommandLine(serveCommand, ['--state', statePathIn(dir), '--socket', `${dir}/s.sock`, `--exit-when-idle=${bad}`, '--log-format', 'none']);
      await assert.rejects(serveCommand.run(flags, positionals), (err: unknown) => {
        assert.ok(err instanceof UsageError, `--exit-when-idle ${bad}: ${String(err)}`);
        assert.match(err.message, /--exit-when-idle must be a whole number of milliseconds/, `--exit-when-idle ${bad}`);
        return true;
      });
    }
    assert.equal(existsSync(statePathIn(dir)), false, 'no state was opened');
  });
});
