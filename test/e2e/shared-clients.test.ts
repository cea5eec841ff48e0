// The clients on the per-user shared server (`serve --shared`): the TypeScript client and the CLI
// commands find it by the discovery rule's shared step, name their state in `initialize`, and
// each sees its own state; they say which server answered; a state whose own server holds its
// lock is reached through that server's socket (StateLocked's data.socket), once; a lock holder
// that is no server is one error at once (with `wait`, when the wait is over). The built CLI is
// the server (the process boundary is the subject); the TS client runs in this process.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { connect } from '../../src/client/client.js';
import { ResponseError } from '../../src/client/response-error.js';
import { ErrorCodes } from '../../src/protocol/error-codes.js';
import { defaultSocketPath, sharedSocketPath } from '../../src/transport/socket.js';
import type { Child } from '../helpers/cli.js';
import { runCli, runToEnd, serveSocket, serveStdio, waitForSocket, waitForStderr } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 120_000;

/** A private environment (its own default state dir and runtime folder) with a shared server running in it. */
async function sharedWorld(t: { after(fn: () => void | Promise<void>): void }): Promise<{ env: NodeJS.ProcessEnv; shared: string; server: Child; defaultState: string; stateIn: (name: string) => string }> {
  const root = tempDir('hs-shared-');
  const stateDir = path.join(root, 'default');
  mkdirSync(stateDir, { mode: 0o700 });
  const env = { ...process.env, HERRSCHER_STATE_DIR: stateDir, XDG_RUNTIME_DIR: path.join(root, 'run'), HERRSCHER_STATE_SOCKET: undefined };
  mkdirSync(env.XDG_RUNTIME_DIR, { mode: 0o700 });
  const shared = sharedSocketPath(env);
  const server = runCli(t, ['serve', '--shared', '--durability', 'write'], { env });
  await waitForSocket(shared, server);
  const stateIn = (name: string): string => {
    const dir = path.join(root, name);
    mkdirSync(dir, { mode: 0o700 });
    return path.join(dir, 'state.json');
  };
  return { env, shared, server, defaultState: path.join(stateDir, 'state.json'), stateIn };
}

const entry = (text: string) => ({ ts: '2026-01-01T00:00:00Z', role: 'user', text });

describe('clients of the shared server', { concurrency: 2 }, () => {
  test('two states on one shared server: connect(), call, status, sessions and tail each see their own state and say the shared server answered', { timeout: TIMEOUT }, async (t) => {
    const { env, shared, server, defaultState, stateIn } = await sharedWorld(t);
    const a = stateIn('a');
    const b = stateIn('b');
    const [ca, cb] = await Promise.all([connect({ env, state: a }), connect({ env, state: b })]);
    t.after(() => Promise.all([ca.close(), cb.close()]));
    assert.deepEqual([ca.server, cb.server], [{ path: shared, source: 'shared' }, { path: shared, source: 'shared' }]);
    await ca.sessionAdd({ session: { name: 'alpha' } });
    await cb.sessionAdd({ session: { name: 'beta' } });
    await ca.transcriptAppend({ name: 'alpha', entry: entry('said in a') });
    const [sa, sb] = await Promise.all([ca.status(), cb.status()]);
    assert.deepEqual([sa.statePath, sb.statePath, sa.pid, sb.pid], [a, b, server.pid, server.pid], 'one process, two states');
    assert.deepEqual((await ca.sessionList()).sessions?.map((s) => s.name), ['alpha']);
    assert.deepEqual((await cb.sessionList()).sessions?.map((s) => s.name), ['beta']);
    // An initialize the caller sends names the client's state too: the bound state answers.
    assert.equal((await ca.initialize()).statePath, a);

    const [status, statusJson, call, sessions, tail, where] = await Promise.all([
      runToEnd(['status', '--state', a], { env }),
      runToEnd(['status', '--json', '--state', b], { env }),
      runToEnd(['call', '--state', b, 'session/list'], { env }),
      runToEnd(['sessions', '--state', a], { env }),
      runToEnd(['tail', 'alpha', '--state', a], { env }),
      runToEnd(['socket', '--state', a], { env }),
    ]);
    assert.deepEqual([where.code, where.stdout], [0, `${shared}\n`], where.stderr);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^state: +${a}$`, 'm'));
    assert.match(status.stdout, new RegExp(`^answered by: +${shared} \\(the per-user shared server;`, 'm'));
    assert.match(status.stdout, /^states open: +2 \(shared server\)$/m, 'the shared server tells how many states it has open');
    assert.equal(statusJson.code, 0, statusJson.stderr);
    assert.equal((JSON.parse(statusJson.stdout) as { statePath: string }).statePath, b);
    assert.equal(call.code, 0, call.stderr);
    assert.deepEqual((JSON.parse(call.stdout) as { sessions: { name: string }[] }).sessions.map((s) => s.name), ['beta']);
    assert.equal(sessions.code, 0, sessions.stderr);
    assert.match(sessions.stdout, /alpha/);
    assert.doesNotMatch(sessions.stdout, /beta/);
    assert.equal(tail.code, 0, tail.stderr);
    assert.match(tail.stdout, /said in a/);

    // A server's error answer names the server that gave it.
    const missing = await runToEnd(['call', '--state', b, 'transcript/append', JSON.stringify({ name: 'ghost', entry: entry('x') })], { env });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, new RegExp(`^error ${ErrorCodes.UnknownSession}: `));
    assert.match(missing.stderr, new RegExp(`\\(answered by the server at ${shared} \\(the per-user shared server;`));

    // No state named: the client names its own default state (its HERRSCHER_STATE_DIR), not the server's.
    const plain = await connect({ env });
    t.after(() => plain.close());
    assert.equal((await plain.status()).statePath, defaultState);
    assert.deepEqual((await plain.sessionList()).sessions ?? [], []);
  });

  test('connect({ wait, state }) reaches a shared server that starts after it began waiting', { timeout: TIMEOUT }, async (t) => {
    const root = tempDir('hs-shared-');
    const env = { ...process.env, HERRSCHER_STATE_DIR: path.join(root, 'default'), XDG_RUNTIME_DIR: path.join(root, 'run'), HERRSCHER_STATE_SOCKET: undefined };
    mkdirSync(env.XDG_RUNTIME_DIR, { mode: 0o700 });
    const state = path.join(root, 'state.json');
    // Nothing yet: without wait, at once; the rule's last step (the default socket) was tried.
    await assert.rejects(connect({ env, state }), (err: Error & { code?: string }) => err.code === 'ENOSERVER' && err.message.includes(defaultSocketPath(undefined, env)));
    // Waiting begins before the server is started: only the wait can reach it.
    const waiting = connect({ env, state, wait: true, timeoutMs: 60_000 });
    const server = runCli(t, ['serve', '--shared', '--durability', 'write'], { env });
    const client = await waiting;
    t.after(() => client.close());
    assert.equal(client.server?.source, 'shared');
    const s = await client.status();
    assert.deepEqual([s.statePath, s.pid], [state, server.pid]);
  });

  test("a state whose own server holds its lock is served there (StateLocked's data.socket, dialled once); a holder that is no server is -32060 at once, and with wait once the wait is over", { timeout: TIMEOUT }, async (t) => {
    const { env, shared, stateIn } = await sharedWorld(t);
    // A dedicated server of c, recorded: the shared server cannot open c and names its socket.
    const c = stateIn('c');
    const own = await serveSocket(t, c, path.join(path.dirname(c), 'c.sock'));
    // Its socket accepts before its record is written; 'serving' is logged once both are done.
    await waitForStderr(own, /"msg":"serving"/);
    const viaShared = await connect({ env, socket: shared, state: c });
    t.after(() => viaShared.close());
    assert.deepEqual(viaShared.server, { path: own.socket, source: 'record' });
    const s = await viaShared.status();
    assert.deepEqual([s.pid, s.statePath], [own.pid, c]);
    // Found by the rule with no socket given: its record, before the shared server.
    const direct = await connect({ env, state: c });
    t.after(() => direct.close());
    assert.equal(direct.server?.source, 'record');
    const where = await runToEnd(['socket', '--socket', shared, '--state', c], { env });
    assert.deepEqual([where.code, where.stdout], [0, `${own.socket}\n`], 'socket prints the socket that answered: the holder\'s');

    // d's lock held by a server on stdio alone (no socket, no record): nothing to dial.
    const d = stateIn('d');
    const holder = serveStdio(t, d, 'ndjson', ['--no-socket']);
    assert.equal((await holder.rpc.request('status')).error, undefined, 'the holder is up: it holds the lock');
    const locked = (err: unknown): boolean => err instanceof ResponseError && err.code === ErrorCodes.StateLocked && err.message.startsWith(`${d}: the server at ${shared}`);
    await assert.rejects(connect({ env, state: d }), locked);
    await assert.rejects(connect({ env, state: d, wait: true, timeoutMs: 300 }), (err: unknown) => locked(err) && (err as Error).message.endsWith('(waited 300 ms)'));
  });
});
