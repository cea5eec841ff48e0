// SharedService (src/server/shared-service.ts) as an object, apart from the routing of its states
// (shared-server.test.ts): one listener and when it refuses, the socket's lifetime lock (held by
// another → EADDRINUSE with its socket untouched; a failed start holds nothing; released at the
// stop), the default folder made, the socket file replaced, the ordered stop once, presence.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import type { SharedServiceOptions } from '../../src/server/shared-service.js';
import { SharedService } from '../../src/server/shared-service.js';
import { socketLockPath } from '../../src/server/socket-lock.js';
import { SocketError } from '../../src/transport/socket.js';
import { DEFAULT_MAX_MESSAGE_BYTES, MAX_CONNECTIONS, MAX_SHARED_CONNECTIONS } from '../../src/transport/limits.js';
import type { LogLine } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { connectRaw } from '../helpers/wire.js';
import { drivenTimers } from '../helpers/idle-timers.js';
import { signal } from '../helpers/state-server-rig.js';

/** A SharedService (not listening yet) whose log lines are kept; stopped when the test ends. */
function make(t: { after(fn: () => unknown): void }, root: string, o: Partial<SharedServiceOptions> = {}) {
  const logs: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
  const service = new SharedService({ log, version: 'test', defaultState: statePathIn(path.join(root, 'default')), framing: { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES }, stopGraceMs: 2000, ...o });
  t.after(() => service.stop(0, 'test ended'));
  return { service, logs };
}

test('one listener: a second listen is refused, and a listen once stopping; socket says where', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const { service } = make(t, root);
  assert.equal(service.socket, undefined);
  const at = path.join(root, 's.sock');
  assert.equal(await service.listen(path.relative(process.cwd(), at)), at, 'answered absolute');
  assert.equal(service.socket, at);
  await assert.rejects(service.listen(path.join(root, 't.sock')), /listens already/);
  const other = make(t, root).service;
  assert.equal(other.isStopping, false);
  void other.stop(3, 'early');
  assert.equal(other.isStopping, true);
  await assert.rejects(other.listen(path.join(root, 'u.sock')), /stopping/);
  assert.deepEqual(await other.stop(0, 'again'), { code: 3, why: 'early' }, 'the first stop wins');
  assert.deepEqual(await other.stopped, { code: 3, why: 'early' });
});

test('the lock held by another: EADDRINUSE, its socket untouched; the failed start holds nothing, the stop releases the lock', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const at = path.join(root, 's.sock');
  const first = make(t, root).service;
  await first.listen(at);
  const made = statSync(at).ino;
  const second = make(t, root).service;
  await assert.rejects(second.listen(at), (err: unknown) => err instanceof SocketError && err.code === 'EADDRINUSE' && err.message.includes(socketLockPath(at)));
  assert.equal(statSync(at).ino, made, 'the first one\'s socket is left alone');
  await first.stop(0, 'done');
  assert.equal(existsSync(at), false);
  // The second one's failed start took no lock, and the first one's stop released its own.
  assert.equal(await second.listen(at), at);
});

test('a start that fails after taking the lock (a regular file at the socket path) releases it; makeFolder makes a private folder', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const at = path.join(root, 's.sock');
  writeFileSync(at, 'not a socket');
  const { service } = make(t, root);
  await assert.rejects(service.listen(at));
  assert.equal(service.socket, undefined);
  rmSync(at);
  const again = make(t, root).service;
  assert.equal(await again.listen(at), at, 'the lock the failed start took is free');
  const sub = path.join(root, 'sub');
  await assert.rejects(make(t, root).service.listen(path.join(sub, 's.sock')), 'no folder, none made');
  const third = make(t, root).service;
  assert.equal(await third.listen(path.join(sub, 's.sock'), { makeFolder: true }), path.join(sub, 's.sock'));
  assert.equal(statSync(sub).mode & 0o777, 0o700, 'made private');
});

test('a socket file replaced by another stops the server saying so', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const at = path.join(root, 's.sock');
  const { service } = make(t, root, { socketCheckMs: 5 });
  await service.listen(at);
  // Another socket moved over ours: same name, another file.
  const otherPath = path.join(root, 'other.sock');
  const other = net.createServer();
  await new Promise<void>((resolve) => other.listen(otherPath, resolve));
  t.after(() => other.close());
  renameSync(otherPath, at);
  const stopped = await service.stopped;
  assert.equal(stopped.code, 0);
  assert.equal(stopped.why, `the socket file ${at} was replaced: no client can reach this server any more`);
});

test('a socket file removed and a regular file in its place: replaced too; the stop then leaves that file', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const at = path.join(root, 's.sock');
  const { service } = make(t, root, { socketCheckMs: 5 });
  await service.listen(at);
  renameSync(at, path.join(root, 'moved.sock'));
  writeFileSync(at, 'someone else\'s');
  const stopped = await service.stopped;
  assert.match(stopped.why, /was replaced/);
  assert.equal(readFileSync(at, 'utf8'), 'someone else\'s');
});

test('--exit-when-idle counts each socket from its connect to its close', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const { service } = make(t, root, { exitWhenIdleMs: 30 });
  const at = await service.listen(path.join(root, 's.sock'));
  const client = await connectRaw(at, 'ndjson', t);
  service.ready();
  await client.call('session/list', {});
  assert.equal(service.isStopping, false, 'a connection is open');
  client.socket.end();
  assert.deepEqual(await service.stopped, { code: 0, why: 'unused for 30 ms (--exit-when-idle)' });
});

test('the stop ends the connections still open, and the framing given is used with its hook', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const errors: unknown[] = [];
  const { service } = make(t, root, { framing: { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES, onProtocolError: (e) => errors.push(e) } });
  const at = await service.listen(path.join(root, 's.sock'));
  const client = await connectRaw(at, 'ndjson', t);
  client.writeBytes('{"jsonrpc":"2.0","id":1,"method":\n');
  assert.equal((await client.waitFor((m) => m.error !== undefined)).error?.code, -32700);
  assert.equal(errors.length, 1);
  const idle = await connectRaw(at, 'ndjson', t);
  await service.stop(0, 'done');
  await idle.ended;
});

test('the options given reach each state: its store\'s options, the feed\'s observer, the socket in status, the idle drop told', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const dropped: { state: string; why: string }[] = [];
  let goneResolve!: () => void;
  const gone = new Promise<void>((r) => (goneResolve = r));
  let endedResolve!: () => void;
  const ended = new Promise<void>((r) => (endedResolve = r));
  const { service } = make(t, root, {
    store: { durability: 'write' },
    feed: { observer: { ended: () => endedResolve() } },
    stateIdleMs: 1,
    dropped: (state, why) => {
      dropped.push({ state, why });
      goneResolve();
    },
  });
  const at = await service.listen(path.join(root, 's.sock'));
  const state = statePathIn(path.join(root, 'a'));
  const c = await connectRaw(at, 'ndjson', t);
  await c.call('initialize', { state });
  await c.call('session/add', { session: { name: 'a' } });
  await c.call('transcript/append', { name: 'a', entry: { ts: '2025-01-01T00:00:00Z', role: 'user', text: 'one' } });
  const status = (await c.call('status', {})) as { durability: string; socket: string | null; revision: number; epoch: string };
  assert.equal(status.durability, 'write', 'the store options given');
  assert.equal(status.socket, at);
  await c.call('watch/subscribe', { transcripts: ['a'], since: { epoch: status.epoch, revision: status.revision, transcripts: { a: -1 } } });
  await ended;
  c.socket.end();
  await gone;
  assert.equal(dropped[0]?.state, state);
});

test('ready() without --exit-when-idle: nothing to start, the service serves on', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const { service } = make(t, root);
  const at = await service.listen(path.join(root, 's.sock'));
  service.ready();
  const c = await connectRaw(at, 'ndjson', t);
  await c.call('initialize', { state: statePathIn(path.join(root, 'a')) });
  assert.ok(await c.call('session/list', {}));
  assert.equal(service.isStopping, false);
});

test('without --exit-when-idle the shared server never stops by itself, however long it stays unused', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const clock = drivenTimers();
  const { service } = make(t, root, { idleTimers: clock.timers });
  await service.listen(path.join(root, 's.sock'));
  service.ready();
  clock.fireAll();
  assert.equal(service.isStopping, false);
});

test('the socket file left in place: the checks find it there, again and again, and the server serves on', async (t) => {
  const root = tempDir('hs-shared-svc-');
  let checks = 0;
  const thrice = signal();
  const { service } = make(t, root, { socketCheckMs: 1, socketStillThere: () => ++checks === 3 && thrice.resolve() });
  const at = await service.listen(path.join(root, 's.sock'));
  await thrice.promise;
  assert.equal(service.isStopping, false);
  const c = await connectRaw(at, 'ndjson', t);
  assert.ok(await c.call('session/list', {}));
});

// The log lines below are the ones docs/operations.md ("What the log says") promises operators:
// their level and fields, never their words.

test('the stop is logged at info: why it began, then the exit code', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const { service, logs } = make(t, root);
  await service.listen(path.join(root, 's.sock'));
  await service.stop(3, 'told to');
  const info = logs.filter((l) => l.level === 30).map((l) => ({ why: l.why, code: l.code }));
  assert.deepEqual(info, [{ why: 'told to', code: undefined }, { why: undefined, code: 3 }]);
});

test('a message the transport refuses is answered, and logged at debug with the code answered (no hook given)', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const { service, logs } = make(t, root);
  const at = await service.listen(path.join(root, 's.sock'));
  const client = await connectRaw(at, 'ndjson', t);
  client.writeBytes('{"jsonrpc":"2.0","id":1,"method":\n');
  assert.equal((await client.waitFor((m) => m.error !== undefined)).error?.code, -32700);
  assert.deepEqual(logs.filter((l) => l.level === 20 && l.code !== undefined).map((l) => l.code), [-32700]);
});

test('the shared server serves its own bound of connections at once (above a dedicated server\'s); one more is closed on arrival, warned', async (t) => {
  const root = tempDir('hs-shared-svc-');
  const { service, logs } = make(t, root);
  const at = await service.listen(path.join(root, 's.sock'));
  assert.ok(MAX_SHARED_CONNECTIONS > MAX_CONNECTIONS);
  const sockets: net.Socket[] = [];
  t.after(() => {
    for (const socket of sockets) socket.destroy();
  });
  // Each connection is served: a line that is not JSON gets its parse error back.
  const served = (socket: net.Socket) =>
    new Promise<boolean>((resolve) => {
      socket.once('data', () => resolve(true));
      socket.once('close', () => resolve(false));
    });
  // In batches a listen backlog takes (a unix socket's connect fails with EAGAIN past it).
  let answered = 0;
  for (let i = 0; i < MAX_SHARED_CONNECTIONS; i += 64) {
    const batch: Promise<boolean>[] = [];
    for (let j = i; j < Math.min(i + 64, MAX_SHARED_CONNECTIONS); j++) {
      const socket = net.connect(at);
      sockets.push(socket);
      batch.push(served(socket));
      socket.write('x\n');
    }
    answered += (await Promise.all(batch)).filter(Boolean).length;
  }
  assert.equal(answered, MAX_SHARED_CONNECTIONS);
  const extra = net.connect(at);
  sockets.push(extra);
  await new Promise((resolve) => extra.once('close', resolve));
  const warned = logs.filter((l) => l.level === 40);
  assert.equal(warned.length, 1, JSON.stringify(warned));
  assert.deepEqual([warned[0]?.socket, warned[0]?.max], [at, MAX_SHARED_CONNECTIONS]);
});
