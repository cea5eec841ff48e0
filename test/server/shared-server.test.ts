// The shared server (`serve --shared`) in process: each connection is served by the state its
// first request names (initialize's `state`, else the default state), states are apart (their own
// store, lock and answers), a state that cannot be opened fails only its own calls, and a
// dedicated server refuses a state it does not serve.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import pino from 'pino';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { MAX_HELD_MESSAGES } from '../../src/server/shared-hub.js';
import { SharedService } from '../../src/server/shared-service.js';
import { Store } from '../../src/store/store.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../src/transport/limits.js';
import type { LogLine } from '../helpers/server.js';
import { startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { connectRaw } from '../helpers/wire.js';

const TIMEOUT = { timeout: 30_000 };

/** A SharedService on a socket in a fresh folder; stopped when the test ends. */
async function startShared(t: { after(fn: () => unknown): void }, o: { defaultState?: string; stateIdleMs?: number; dropped?: (state: string, why: string) => void; socketCheckMs?: number; socketStillThere?: () => void; exitWhenIdleMs?: number } = {}) {
  const root = tempDir('hs-shared-');
  const logs: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
  const service = new SharedService({
    log,
    version: 'test',
    defaultState: o.defaultState ?? statePathIn(path.join(root, 'default')),
    framing: { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES },
    stopGraceMs: 2000,
    stateIdleMs: o.stateIdleMs ?? 60_000,
    ...(o.dropped ? { dropped: o.dropped } : {}),
    ...(o.socketCheckMs ? { socketCheckMs: o.socketCheckMs } : {}),
    ...(o.socketStillThere ? { socketStillThere: o.socketStillThere } : {}),
    ...(o.exitWhenIdleMs ? { exitWhenIdleMs: o.exitWhenIdleMs } : {}),
  });
  const socket = await service.listen(path.join(root, 's.sock'));
  service.ready();
  t.after(() => service.stop(0, 'test ended'));
  /** A state dir of its own under the test's folder. */
  const stateIn = (name: string): string => {
    const dir = path.join(root, name);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return statePathIn(dir);
  };
  const connect = () => connectRaw(socket, 'ndjson', t);
  return { service, socket, logs, root, stateIn, connect };
}

const session = (name: string) => ({ session: { name, channelID: 'c1', type: 'text', cmd: 'claude' } });

test('each connection is served by the state initialize names, apart from every other state', TIMEOUT, async (t) => {
  const s = await startShared(t);
  const a = s.stateIn('a');
  const b = s.stateIn('b');
  const [ca, cb, ca2] = await Promise.all([s.connect(), s.connect(), s.connect()]);
  // Sent at once, before any answer: the requests after initialize are held until the state is open.
  const ia = ca.send('initialize', { state: a });
  const add = ca.send('session/add', session('alpha'));
  const ib = cb.send('initialize', { state: b });
  const listB = cb.send('session/list', {});
  assert.equal(((await ca.response(ia)).result as { statePath: string }).statePath, a);
  assert.equal(((await cb.response(ib)).result as { statePath: string }).statePath, b);
  assert.ok((await ca.response(add)).result, 'the write on a is answered');
  assert.deepEqual((await cb.response(listB)).result, { sessions: [] }, 'b does not see a\'s session');
  // A second connection on a shares a's store: it sees the write.
  await ca2.call('initialize', { state: a });
  const listed = (await ca2.call('session/list', {})) as { sessions: { name: string }[] };
  assert.deepEqual(listed.sessions.map((x) => x.name), ['alpha']);
  const status = (await ca2.call('status', {})) as { statePath: string; connections: number; socket: string; statesOpen?: number };
  assert.equal(status.statePath, a);
  assert.equal(status.connections, 2, 'status counts the connections on its own state');
  assert.equal(status.socket, s.socket);
  assert.equal(s.service.hub.size, 2, 'one unit per state');
  assert.equal(status.statesOpen, 2, 'status tells the states the shared server has open');
  const cc = await s.connect();
  await cc.call('initialize', { state: s.stateIn('c') });
  assert.equal(((await ca.call('status', {})) as { statesOpen?: number }).statesOpen, 3, 'a state opened since is counted');
});

test('initialize naming another state on a bound connection is NotThisState; the same state is answered', TIMEOUT, async (t) => {
  const s = await startShared(t);
  const a = s.stateIn('a');
  const c = await s.connect();
  await c.call('initialize', { state: a });
  assert.equal(((await c.call('initialize', { state: a })) as { statePath: string }).statePath, a);
  const other = await c.request('initialize', { state: s.stateIn('b') });
  assert.equal(other.error?.code, ErrorCodes.NotThisState);
  assert.match(other.error?.message ?? '', /serves .*a\/state\.json, not .*b\/state\.json/);
  assert.equal(s.service.hub.size, 1, 'the refused state was not opened');
});

test('a first request other than initialize with a state binds to the default state', TIMEOUT, async (t) => {
  const root = tempDir('hs-shared-default-');
  mkdirSync(path.join(root, 'home'), { mode: 0o700 });
  const s = await startShared(t, { defaultState: statePathIn(path.join(root, 'home')) });
  const c = await s.connect();
  const status = (await c.call('status', {})) as { statePath: string };
  assert.equal(status.statePath, statePathIn(path.join(root, 'home')));
});

test('a locked, a damaged and a not private state fail only their own calls, with the store\'s code', TIMEOUT, async (t) => {
  const s = await startShared(t);
  const locked = s.stateIn('locked');
  const damaged = s.stateIn('damaged');
  const open = s.stateIn('open-to-group');
  chmodSync(path.dirname(open), 0o775);
  const fine = s.stateIn('fine');
  // Another holder of locked's single-writer lock (a store of its own, as another server would have).
  const holder = await Store.open(locked);
  t.after(() => holder.close());
  writeFileSync(damaged, '{ not json');
  const [cl, cd, cf] = await Promise.all([s.connect(), s.connect(), s.connect()]);
  const il = cl.send('initialize', { state: locked });
  const held = cl.send('session/list', {});
  const id = cd.send('initialize', { state: damaged });
  const lockedReply = await cl.response(il);
  assert.equal(lockedReply.error?.code, ErrorCodes.StateLocked, JSON.stringify(lockedReply));
  assert.deepEqual(lockedReply.error?.data, { pid: process.pid }, 'the holder\'s pid; no socket: the holder serves none');
  assert.equal((await cl.response(held)).error?.code, ErrorCodes.StateLocked, 'every held request gets the error');
  await cl.ended; // and the connection ends
  const co = await s.connect();
  const openReply = await co.request('initialize', { state: open });
  assert.equal(openReply.error?.code, ErrorCodes.StorageFailure, JSON.stringify(openReply));
  assert.match(openReply.error?.message ?? '', /writable by its group/);
  const damagedReply = await cd.response(id);
  assert.ok(damagedReply.error, 'a damaged state answers an error');
  assert.equal(damagedReply.error.code, ErrorCodes.InvalidParams, `the store's own code for a file it cannot read, not a bug: ${JSON.stringify(damagedReply.error)}`);
  await cf.call('initialize', { state: fine });
  assert.ok(await cf.call('session/add', session('x')), 'another state keeps serving');
  assert.equal(s.service.hub.size, 1, 'only the state that opened is held');
  assert.deepEqual(s.logs.filter((l) => l.level >= 50), [], 'no error line: a state that cannot open is the caller\'s matter');
});

test('a state unused for --state-idle-ms is dropped and opened again by the next call', TIMEOUT, async (t) => {
  let dropped!: (why: string) => void;
  const drop = new Promise<string>((resolve) => (dropped = resolve));
  const s = await startShared(t, { stateIdleMs: 1, dropped: (_state, why) => dropped(why) });
  const a = s.stateIn('a');
  const c = await s.connect();
  await c.call('initialize', { state: a });
  await c.call('session/add', session('kept'));
  c.end();
  assert.match(await drop, /unused for 1 ms/);
  assert.equal(s.service.hub.size, 0);
  const again = await s.connect();
  await again.call('initialize', { state: a });
  const listed = (await again.call('session/list', {})) as { sessions: { name: string }[] };
  assert.deepEqual(listed.sessions.map((x) => x.name), ['kept'], 'the write survived the drop');
});

test('a dedicated server answers NotThisState for a state it does not serve, and the usual answer for its own', TIMEOUT, async (t) => {
  const srv = await startServer(t);
  const c = await srv.raw('ndjson');
  const other = await c.request('initialize', { state: statePathIn(tempDir('hs-other-')) });
  assert.equal(other.error?.code, ErrorCodes.NotThisState);
  assert.ok(other.error?.message.includes(srv.state), 'the message names the served state');
  const own = (await c.call('initialize', { state: srv.state })) as { statePath: string };
  assert.equal(own.statePath, srv.state);
});

test('the t.TempDir() pattern: writes, the client closes, the folder is removed right after the last answer, and it stays removed', TIMEOUT, async (t) => {
  const drops: { state: string; why: string }[] = [];
  let dropped!: () => void;
  const drop = new Promise<void>((resolve) => (dropped = resolve));
  const s = await startShared(t, {
    dropped: (state, why) => {
      drops.push({ state, why });
      dropped();
    },
  });
  const dir = path.join(s.root, 'tempdir-test');
  mkdirSync(dir, { mode: 0o700 });
  const state = statePathIn(dir);
  const c = await s.connect();
  await c.call('initialize', { state });
  await c.call('session/add', session('main'));
  await c.call('transcript/append', { name: 'main', entry: { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'hi' } });
  await c.call('participants/append', { name: 'main', userId: 'u1' });
  c.end();
  await c.ended;
  rmSync(dir, { recursive: true });
  await drop;
  assert.deepEqual(drops, [{ state, why: `the state dir ${dir} was removed` }]);
  assert.equal(existsSync(dir), false, 'the folder stays removed after the state was dropped and its store closed');
  assert.deepEqual(s.logs.filter((l) => l.level >= 50), [], 'no error line');
});

test('concurrent first calls on one fresh state share one open', TIMEOUT, async (t) => {
  const s = await startShared(t);
  const state = s.stateIn('together');
  const clients = await Promise.all(Array.from({ length: 5 }, () => s.connect()));
  const answers = (await Promise.all(clients.map((c) => c.call('initialize', { state })))) as { statePath: string }[];
  assert.deepEqual(answers.map((a) => a.statePath), Array(5).fill(state));
  assert.equal(s.service.hub.size, 1);
  assert.equal(s.logs.filter((l) => l.msg === 'state opened').length, 1, 'opened once');
});

test('a connection whose first request names a state of the wrong type, or that floods before its first request, is refused alone', TIMEOUT, async (t) => {
  const s = await startShared(t);
  const bad = await s.connect();
  const reply = await bad.request('initialize', { state: 42 });
  assert.equal(reply.error?.code, ErrorCodes.InvalidParams);
  await bad.ended;
  const flood = await s.connect();
  for (let i = 0; i <= MAX_HELD_MESSAGES + 1; i++) flood.notify('$/progress', { i });
  await flood.ended;
  assert.equal(s.service.hub.size, 0, 'no state was opened for either');
  const fine = await s.connect();
  await fine.call('initialize', { state: s.stateIn('fine') });
});

test('a client that leaves before its first request gets its connection ended, and opens no state', TIMEOUT, async (t) => {
  const s = await startShared(t);
  const c = await s.connect();
  c.end();
  await c.ended;
  assert.equal(s.service.hub.size, 0);
});

test('a state a dedicated server serves answers StateLocked with that server\'s socket, so a client dials it', TIMEOUT, async (t) => {
  const s = await startShared(t);
  const dedicated = await startServer(t);
  const c = await s.connect();
  const reply = await c.request('initialize', { state: dedicated.state });
  assert.equal(reply.error?.code, ErrorCodes.StateLocked, JSON.stringify(reply));
  assert.deepEqual(reply.error?.data, { pid: process.pid, socket: dedicated.socket });
  const direct = await dedicated.raw('ndjson');
  assert.equal(((await direct.call('initialize', { state: dedicated.state })) as { statePath: string }).statePath, dedicated.state, 'the socket named serves it');
});

test('paths to one state file through a linked folder or `..` share one unit', TIMEOUT, async (t) => {
  const s = await startShared(t);
  const real = s.stateIn('real');
  symlinkSync(path.dirname(real), path.join(s.root, 'link'));
  const names = [real, path.join(s.root, 'link', 'state.json'), path.join(s.root, 'link', '..', 'real', 'state.json')];
  const clients = await Promise.all(names.map(() => s.connect()));
  const answers = (await Promise.all(clients.map((c, i) => c.call('initialize', { state: names[i] })))) as { statePath: string }[];
  const expected = path.join(realpathSync(path.dirname(real)), 'state.json');
  assert.deepEqual(answers.map((a) => a.statePath), [expected, expected, expected]);
  assert.equal(s.service.hub.size, 1);
});

test('a shared server whose socket file is removed stops, releasing the socket\'s lock for a successor', TIMEOUT, async (t) => {
  const s = await startShared(t, { socketCheckMs: 10 });
  const c = await s.connect();
  await c.call('initialize', { state: s.stateIn('a') });
  rmSync(s.socket);
  const stopped = await s.service.stopped;
  assert.equal(stopped.code, 0);
  assert.match(stopped.why, /socket file .* was removed/);
  // The lock is free: a successor listens on the same path.
  const next = new SharedService({ log: pino({ level: 'silent' }), version: 'test', defaultState: s.stateIn('d'), framing: { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES } });
  t.after(() => next.stop(0, 'test ended'));
  assert.equal(await next.listen(s.socket), s.socket);
});

test('a shared server whose socket file stays in place keeps serving past many checks', TIMEOUT, async (t) => {
  let checks = 0;
  let threeChecks!: () => void;
  const checked = new Promise<void>((resolve) => (threeChecks = resolve));
  const s = await startShared(t, { socketCheckMs: 5, socketStillThere: () => ++checks === 3 && threeChecks() });
  const c = await s.connect();
  await c.call('initialize', { state: s.stateIn('a') });
  await checked;
  assert.equal(s.service.isStopping, false);
  assert.deepEqual(await c.call('session/list', {}), { sessions: [] });
});

test('a connection its state\'s drop ended (the folder removed while it was open) counts as gone: --exit-when-idle then stops the server', TIMEOUT, async (t) => {
  let droppedA!: () => void;
  const dropped = new Promise<void>((resolve) => (droppedA = resolve));
  const s = await startShared(t, { exitWhenIdleMs: 50, dropped: () => droppedA() });
  const a = s.stateIn('a');
  const c = await s.connect();
  await c.call('initialize', { state: a });
  await c.call('session/add', session('x'));
  // The client keeps its connection; the folder goes, so the drop ends the connection.
  rmSync(path.dirname(a), { recursive: true });
  await dropped;
  const stopped = await s.service.stopped;
  assert.deepEqual([stopped.code, /unused for 50 ms/.test(stopped.why)], [0, true], stopped.why);
});
