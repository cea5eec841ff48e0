// The Service in process (src/server/service.ts), apart from its ordered stop
// (service-stop.test.ts): one listener and when it refuses a second, the server record written
// only when asked, a socket client's side ended once it is answered, the framing's protocol-error
// hook, the stop's grace, a failed start discarded, the client that sent shutdown leaving, and the
// default socket following the instance id.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import type { ServiceOptions } from '../../src/server/service.js';
import type { DirWatchIo } from '../../src/server/state-dir-watch.js';
import { Service } from '../../src/server/service.js';
import { withIo } from '../../src/store/io.js';
import { Store } from '../../src/store/store.js';
import { serveSocket } from '../../src/transport/discovery.js';
import { MAX_CONNECTIONS } from '../../src/transport/limits.js';
import type { ProtocolErrorInfo } from '../../src/transport/framing.js';
import { serverRecordPath } from '../../src/transport/server-record.js';
import type { LogLine } from '../helpers/server.js';
import { signal } from '../helpers/state-server-rig.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { connectRaw } from '../helpers/wire.js';
import { errno } from '../helpers/store.js';
import { drivenTimers } from '../helpers/idle-timers.js';

const entry = (text: string) => ({ ts: '2025-01-01T00:00:00Z', role: 'user', text });

/** A Service on a fresh temp dir (not listening yet) whose log lines are kept; stopped when the test ends. */
async function open(t: { after(fn: () => unknown): void }, options: Partial<ServiceOptions> = {}, dir = tempDir('hs-service-')) {
  const state = statePathIn(dir);
  const logs: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
  const service = await Service.open({ state, log, version: 'test', framing: { maxMessageBytes: 1 << 20 }, stopGraceMs: 2000, ...options });
  t.after(() => service.stop(0, 'test ended'));
  return { dir, state, logs, service };
}

test('one listener: a second listen is refused, and so is a listen once the stop began; socket says where', async (t) => {
  const s = await open(t);
  assert.equal(s.service.socket, undefined);
  const at = path.join(s.dir, 's.sock');
  assert.equal(await s.service.listen(at), at);
  assert.equal(s.service.socket, at);
  await assert.rejects(s.service.listen(path.join(s.dir, 't.sock')), /listens already/);
  assert.equal(existsSync(path.join(s.dir, 't.sock')), false);
  const other = await open(t);
  assert.equal(other.service.isStopping, false);
  void other.service.stop(0, 'early');
  assert.equal(other.service.isStopping, true);
  await assert.rejects(other.service.listen(path.join(other.dir, 's.sock')), /stopping/);
  assert.deepEqual(await other.service.stopped, { code: 0, why: 'early' });
  assert.deepEqual(await other.service.stop(1, 'again'), { code: 0, why: 'early' }, 'the first stop wins');
});

test('record: false writes no server record, and the stop leaves a record it did not write alone', async (t) => {
  const s = await open(t);
  await s.service.listen(path.join(s.dir, 's.sock'), { record: false });
  const record = serverRecordPath(s.state);
  assert.equal(existsSync(record), false);
  // Another server of this process recorded itself meanwhile (a test host runs several).
  mkdirSync(path.dirname(record), { recursive: true, mode: 0o700 });
  const theirs = `${JSON.stringify({ pid: process.pid, socket: '/elsewhere.sock', state: s.state, version: 'x', startedAt: new Date().toISOString() })}\n`;
  writeFileSync(record, theirs, { mode: 0o600 });
  await s.service.stop(0, 'done');
  assert.equal(readFileSync(record, 'utf8'), theirs);
  assert.equal(existsSync(path.join(s.dir, 's.sock')), false, 'the socket file goes all the same');
});

test('a socket client that finished sending is answered, then its connection is ended by the server', async (t) => {
  const s = await open(t);
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  const client = await connectRaw(at, 'ndjson', t);
  const id = client.send('session/add', { session: { name: 'a' } });
  client.socket.end();
  assert.equal((await client.response(id)).error, undefined);
  await client.ended;
  assert.equal(s.service.isStopping, false, 'a socket client leaving does not stop the service');
});

test('the framing given is used, its protocol-error hook over the default one', async (t) => {
  const errors: ProtocolErrorInfo[] = [];
  const s = await open(t, { framing: { maxMessageBytes: 1 << 20, onProtocolError: (e) => errors.push(e) } });
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  const client = await connectRaw(at, 'ndjson', t);
  client.writeBytes('{"jsonrpc":"2.0","id":1,"method":\n');
  const reply = await client.waitFor((m) => m.error !== undefined);
  assert.equal(reply.error?.code, -32700);
  assert.equal(errors.length, 1, 'told to the hook given');
});

test('the stop waits for answers owed at most the grace, then ends the connections anyway (warned)', async (t) => {
  const s = await open(t, { stopGraceMs: 50, lifecycleOwner: 'any' });
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  await s.service.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  const client = await connectRaw(at, 'ndjson', t);
  // A hold that never ends: the append sent now is never answered.
  const on = signal();
  void s.service.server.writes.quiet(async () => {
    on.resolve();
    await new Promise(() => undefined);
  }).catch(() => undefined);
  await on.promise;
  client.send('transcript/append', { name: 'a', entry: entry('held') });
  // exit is read after the append, so the stop it starts owes the append an answer.
  client.notify('exit');
  assert.deepEqual(await s.service.stopped, { code: 1, why: 'exit notification' });
  const answered = s.logs.find((l) => l.step === 'answered');
  assert.equal(answered?.level, 40, 'the answers still owed are warned about');
  assert.equal(answered?.graceMs, 50);
  await client.ended;
});

test('discard: a failed start releases the store and the socket; stop then changes nothing', async (t) => {
  const s = await open(t);
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  await s.service.discard();
  assert.equal(s.service.isStopping, true);
  assert.equal(existsSync(at), false, 'the listener is closed');
  const again = await Store.open(s.state);
  await again.close();
  assert.deepEqual(await s.service.stop(0, 'later'), { code: 1, why: 'start failed' });
});

test('stopWhenShutdownClientLeaves: the client that sent shutdown leaving without exit stops the service with 0', async (t) => {
  const s = await open(t, { stopWhenShutdownClientLeaves: true, lifecycleOwner: 'any' });
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  const client = await connectRaw(at, 'ndjson', t);
  assert.equal(await client.call('shutdown'), null);
  client.socket.end();
  assert.deepEqual(await s.service.stopped, { code: 0, why: 'the client that sent shutdown left without exit' });
});

test('without stopWhenShutdownClientLeaves that client leaving changes nothing', async (t) => {
  const closed = signal();
  const s = await open(t, { lifecycleOwner: 'any', onConnection: (conn) => conn.onClose(closed.resolve) });
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  const client = await connectRaw(at, 'ndjson', t);
  assert.equal(await client.call('shutdown'), null);
  client.socket.end();
  await closed.promise;
  await client.ended;
  assert.equal(s.service.isStopping, false);
});

test('--exit-when-idle: once ready and unused for the time given, the service stops with 0 saying why', async (t) => {
  const s = await open(t, { exitWhenIdleMs: 20 });
  await s.service.listen(path.join(s.dir, 's.sock'));
  s.service.ready();
  assert.deepEqual(await s.service.stopped, { code: 0, why: 'unused for 20 ms (--exit-when-idle)' });
});

test('the default socket: its folder made private; it follows the instance id: listened on, recorded, the old one closed', async (t) => {
  const s = await open(t);
  const first = path.join(s.dir, 'run', 'default.sock');
  await s.service.listen({ path: first, source: 'default' });
  assert.equal(statSync(path.dirname(first)).mode & 0o777, 0o700);
  // A commit that leaves the instance id alone moves nothing.
  await s.service.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  const id = `t${process.pid}x${Date.now().toString(36)}`;
  const moved = serveSocket({ instanceId: id });
  await s.service.store.setInstanceID(id);
  // The move runs after the commit and ends with the old socket closed: its file gone.
  while (existsSync(first)) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(s.service.socket, moved.path);
  assert.equal((JSON.parse(readFileSync(serverRecordPath(s.state), 'utf8')) as { socket: string }).socket, moved.path);
  const client = await connectRaw(moved.path, 'ndjson', t);
  assert.equal(((await client.call('status')) as { socket: string }).socket, moved.path);
  // Said at info, with the socket now and the one before (docs/operations.md).
  assert.deepEqual(s.logs.filter((l) => l.was !== undefined).map((l) => [l.level, l.socket, l.was]), [[30, moved.path, first]]);
});

test('an explicit socket in a folder that does not exist is refused (only the default one\'s folder is made)', async (t) => {
  const s = await open(t);
  await assert.rejects(s.service.listen(path.join(s.dir, 'none', 's.sock')));
  assert.equal(existsSync(path.join(s.dir, 'none')), false);
});

test('an instance id whose socket cannot be served: the service stays on its socket', async (t) => {
  const s = await open(t);
  const first = path.join(s.dir, 'default.sock');
  await s.service.listen({ path: first, source: 'default' });
  const id = `t${process.pid}y${Date.now().toString(36)}`;
  const taken = serveSocket({ instanceId: id }).path;
  mkdirSync(path.dirname(taken), { recursive: true, mode: 0o700 });
  writeFileSync(taken, 'a regular file');
  t.after(() => rmSync(taken, { force: true }));
  await s.service.store.setInstanceID(id);
  // The stop waits for a move under way.
  await s.service.stop(0, 'done');
  assert.equal(s.service.socket, first);
  assert.equal(readFileSync(taken, 'utf8'), 'a regular file');
  assert.ok(s.logs.some((l) => l.level === 50 && l.socket === first), 'the failed move is logged as an error');
});

test('the store options given are the store\'s', async (t) => {
  const s = await open(t, { store: { durability: 'write' } });
  assert.equal(s.service.server.status().durability, 'write');
});

test('the feed bounds given are the feed\'s: a returning subscriber\'s catch-up tells the observer given', async (t) => {
  const ended = signal();
  const s = await open(t, { feed: { observer: { ended: () => ended.resolve() } } });
  await s.service.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  await s.service.store.appendTranscript('a', entry('one'));
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  const client = await connectRaw(at, 'ndjson', t);
  await client.call('watch/subscribe', { transcripts: ['a'], since: { epoch: s.service.store.epoch, revision: s.service.store.revision, transcripts: { a: -1 } } });
  await client.waitFor((m) => m.method === 'transcript/didAppend');
  await ended.promise;
});

test('discard of a service that never listened, with no idle watch and no dir watch: the store is released', async (t) => {
  const s = await open(t, { watchStateDir: false });
  await s.service.discard();
  const again = await Store.open(s.state);
  await again.close();
  assert.deepEqual(await s.service.stop(0, 'later'), { code: 1, why: 'start failed' });
});

test('the state dir is watched unless told otherwise: a write in it is followed by a look that finds it in place', async (t) => {
  const looked = signal();
  const s = await open(t, { stateDirStillThere: () => looked.resolve() });
  await s.service.listen(path.join(s.dir, 's.sock')); // the watch's timers are unref'd: the socket keeps the test alive
  await s.service.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  await looked.promise;
  assert.equal(s.service.isStopping, false);
});

test('ready() without --exit-when-idle: nothing to start, the service serves on', async (t) => {
  const s = await open(t);
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  s.service.ready();
  const client = await connectRaw(at, 'ndjson', t);
  assert.ok(await client.call('session/list', {}));
  assert.equal(s.service.isStopping, false);
});

// The log lines below are the ones docs/operations.md ("What the log says") promises operators:
// their level and fields, never their words.

test('the store\'s warnings reach the log at warn (an instance id that cannot name a socket)', async (t) => {
  const dir = tempDir('hs-service-');
  writeFileSync(statePathIn(dir), `${JSON.stringify({ instanceID: 'not a socket name!' })}\n`);
  const s = await open(t, {}, dir);
  assert.equal(s.logs.filter((l) => l.level === 40).length, 1, JSON.stringify(s.logs));
});

test('the store\'s errors reach the log at error with the error (a temp file the start cannot sweep)', async (t) => {
  const dir = tempDir('hs-service-');
  writeFileSync(statePathIn(dir), '{}\n');
  writeFileSync(`${statePathIn(dir)}.tmp`, 'left by a crash');
  const s = await open(t, { store: { io: withIo({ unlink: () => Promise.reject(errno('EIO', 'unlink')) }) } }, dir);
  const errors = s.logs.filter((l) => l.level === 50);
  assert.equal(errors.length, 1, JSON.stringify(s.logs));
  assert.ok(errors[0]?.err, 'the error is carried as err');
});

test('a server record that cannot be written: the service serves all the same, an error line with the error at the start and at the stop', async (t) => {
  const s = await open(t);
  // A folder where the record goes: neither its write nor its removal can succeed.
  mkdirSync(path.join(serverRecordPath(s.state), 'x'), { recursive: true });
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  const errors = () => s.logs.filter((l) => l.level === 50);
  assert.equal(errors().length, 1, JSON.stringify(s.logs));
  assert.ok(errors()[0]?.err, 'the error is carried as err');
  const client = await connectRaw(at, 'ndjson', t);
  assert.ok(await client.call('session/list', {}));
  await s.service.stop(0, 'done');
  assert.equal(errors().length, 2, JSON.stringify(s.logs));
  assert.ok(errors()[1]?.err, 'the error is carried as err');
});

test('the most connections at once: one more is closed on arrival, warned with the socket and the bound', async (t) => {
  let served = 0;
  let target = 0;
  let reached = signal();
  const s = await open(t, { onConnection: () => ++served === target && reached.resolve() });
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  const sockets: net.Socket[] = [];
  t.after(() => {
    for (const socket of sockets) socket.destroy();
  });
  // In batches a listen backlog takes (a unix socket's connect fails with EAGAIN past it).
  while (served < MAX_CONNECTIONS) {
    target = Math.min(served + 64, MAX_CONNECTIONS);
    reached = signal();
    for (let i = served; i < target; i++) sockets.push(net.connect(at));
    await reached.promise;
  }
  const extra = net.connect(at);
  sockets.push(extra);
  await new Promise((resolve) => extra.once('close', resolve));
  const warned = s.logs.filter((l) => l.level === 40);
  assert.equal(warned.length, 1, JSON.stringify(warned));
  assert.deepEqual([warned[0]?.socket, warned[0]?.max], [at, MAX_CONNECTIONS]);
});

test('without --exit-when-idle the service never stops by itself, however long it stays unused', async (t) => {
  const clock = drivenTimers();
  const s = await open(t, { idleTimers: clock.timers });
  await s.service.listen(path.join(s.dir, 's.sock'));
  s.service.ready();
  clock.fireAll();
  assert.equal(s.service.isStopping, false);
});

test('--exit-when-idle: an open connection keeps the service up, however long it stays quiet; once it leaves, the wait begins again', async (t) => {
  const clock = drivenTimers();
  const closed = signal();
  const s = await open(t, { exitWhenIdleMs: 1000, idleTimers: clock.timers, onConnection: (conn) => conn.onClose(closed.resolve) });
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  s.service.ready();
  const client = await connectRaw(at, 'ndjson', t);
  assert.ok(await client.call('session/list', {}));
  clock.fireAll();
  assert.equal(s.service.isStopping, false, 'a connection is open');
  client.socket.end();
  await closed.promise;
  await client.ended;
  // The watch is told once the closed connection answered everything: it arms its wait again.
  while (clock.pending() === 0) await new Promise((resolve) => setImmediate(resolve));
  clock.fireAll();
  assert.deepEqual(await s.service.stopped, { code: 0, why: 'unused for 1000 ms (--exit-when-idle)' });
});

test('the stop is logged at info: why it began, then the exit code', async (t) => {
  const s = await open(t);
  await s.service.listen(path.join(s.dir, 's.sock'));
  await s.service.stop(3, 'told to');
  const info = s.logs.filter((l) => l.level === 30).map((l) => ({ why: l.why, code: l.code }));
  assert.deepEqual(info, [{ why: 'told to', code: undefined }, { why: undefined, code: 3 }]);
});

test('a message the transport refuses is answered, and logged at debug with the code answered (no hook given)', async (t) => {
  const s = await open(t);
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  const client = await connectRaw(at, 'ndjson', t);
  client.writeBytes('{"jsonrpc":"2.0","id":1,"method":\n');
  assert.equal((await client.waitFor((m) => m.error !== undefined)).error?.code, -32700);
  assert.deepEqual(s.logs.filter((l) => l.level === 20 && l.code !== undefined).map((l) => l.code), [-32700]);
});

/** State-dir watch calls that record what the watch asked for and never look at a real dir. */
function recordingDirIo(o: { watchFails?: Error } = {}) {
  const asked: string[] = [];
  const timer = { unref: () => timer };
  const io: Partial<DirWatchIo> = {
    statSync: () => (asked.push('statSync'), { dev: 1, ino: 1 }),
    stat: () => void asked.push('stat'),
    watch: () => {
      asked.push('watch');
      if (o.watchFails) throw o.watchFails;
      return { on: () => undefined, close: () => undefined };
    },
    setTimeout: () => (asked.push('setTimeout'), timer),
    clearTimeout: () => undefined,
    setInterval: () => (asked.push('setInterval'), timer),
    clearInterval: () => undefined,
  };
  return { io, asked };
}

test('watchStateDir: false: the state dir is neither watched nor looked at', async (t) => {
  const dir = recordingDirIo();
  const s = await open(t, { watchStateDir: false, stateDirIo: dir.io });
  await s.service.listen(path.join(s.dir, 's.sock'));
  await s.service.stop(0, 'done');
  assert.deepEqual(dir.asked, []);
});

test('a state dir that cannot be watched: warned with the error and the dir; the service serves on (its removal is polled for)', async (t) => {
  const dir = recordingDirIo({ watchFails: errno('ENOSPC', 'watch') });
  const s = await open(t, { stateDirIo: dir.io });
  assert.ok(dir.asked.includes('watch') && dir.asked.includes('setInterval'), 'polled for instead');
  const warned = s.logs.filter((l) => l.level === 40);
  assert.deepEqual(warned.map((l) => [l.err?.code, l.dir]), [['ENOSPC', s.service.store.dir]]);
  assert.equal(s.service.isStopping, false);
});

test('an explicit socket never moves: an instance id set later leaves the service where it listens', async (t) => {
  const s = await open(t);
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  const id = `t${process.pid}z${Date.now().toString(36)}`;
  await s.service.store.setInstanceID(id);
  // The stop waits for a move under way, were there one.
  await s.service.stop(0, 'done');
  assert.equal(s.service.socket, at);
  assert.equal(existsSync(serveSocket({ instanceId: id }).path), false);
});

test('a socket client\'s requests are logged with the transport `socket`', async (t) => {
  const s = await open(t);
  const at = await s.service.listen(path.join(s.dir, 's.sock'));
  const client = await connectRaw(at, 'ndjson', t);
  assert.ok(await client.call('session/list', {}));
  assert.deepEqual(s.logs.filter((l) => l.method === 'session/list').map((l) => l.transport), ['socket']);
});
