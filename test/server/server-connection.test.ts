// One client's connection (src/server/connection.ts) on a StateServer over in-memory streams:
// what it still owes (idle(), counted from requests in and responses out, never from
// notifications), its first answer, its notifications and close, and its output flow.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { createFramedTransport } from '../../src/transport/framing.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../src/transport/limits.js';
import type { Rig } from '../helpers/state-server-rig.js';
import { signal, stateServerRig } from '../helpers/state-server-rig.js';

const entry = (text: string) => ({ ts: '2025-01-01T00:00:00Z', role: 'user', text });

/** Holds every write of the server until `release()`; resolves once the hold is on. */
async function holdWrites(r: Rig): Promise<{ release: () => void; done: Promise<void> }> {
  const on = signal();
  const gate = signal();
  const done = r.server.writes.quiet(async () => {
    on.resolve();
    await gate.promise;
  });
  await on.promise;
  return { release: gate.resolve, done };
}

/** A full round trip on another connection: what the server had to do before it, it has done. */
async function roundTrip(r: Rig): Promise<void> {
  const other = r.connect();
  await other.call('status');
  other.end();
  await other.closed;
}

test('idle() resolves at once when nothing is owed, else once every request received is answered (every waiter)', async (t) => {
  const arrived = signal();
  const r = await stateServerRig(t, { onExit: () => arrived.resolve() });
  await r.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  const client = r.connect();
  await client.conn.idle();
  const hold = await holdWrites(r);
  const ids = [client.send('transcript/append', { name: 'a', entry: entry('x') }), client.send('transcript/append', { name: 'a', entry: entry('y') })];
  // The notification is read after both requests: once it is seen, they are counted.
  client.notify('exit');
  await arrived.promise;
  const settled: string[] = [];
  void client.conn.idle().then(() => settled.push('idle 1'));
  void client.conn.idle().then(() => settled.push('idle 2'));
  void client.conn.firstAnswer.then(() => settled.push('first answer'));
  await roundTrip(r);
  assert.deepEqual(settled, [], 'two answers owed, none given');
  hold.release();
  await hold.done;
  const replies = await Promise.all(ids.map((id) => client.response(id)));
  assert.deepEqual(replies.map((m) => m.result), [{ seq: 0 }, { seq: 1 }]);
  await client.conn.idle();
  assert.deepEqual(settled.sort(), ['first answer', 'idle 1', 'idle 2']);
});

test('notifications either way are not counted: idle() after them waits for the request only', async (t) => {
  const arrived = signal();
  const r = await stateServerRig(t, { onExit: () => arrived.resolve() });
  await r.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  const client = r.connect();
  await client.call('watch/subscribe', { sessions: true, transcripts: ['a'] });
  client.notify('some/notification', { x: 1 });
  // Notifications to the client: three appends' didAppend.
  for (const text of ['1', '2', '3']) await r.store.appendTranscript('a', entry(text));
  for (let i = 0; i < 3; i++) await client.waitFor((m) => m.method === 'transcript/didAppend');
  const hold = await holdWrites(r);
  const id = client.send('transcript/append', { name: 'a', entry: entry('4') });
  client.notify('exit');
  await arrived.promise;
  let idle = false;
  void client.conn.idle().then(() => (idle = true));
  await roundTrip(r);
  assert.equal(idle, false, 'the held append is still owed');
  hold.release();
  assert.deepEqual((await client.response(id)).result, { seq: 3 });
  await client.conn.idle();
});

test('only `exit` among notifications reaches the lifecycle; others are ignored', async (t) => {
  const exits: number[] = [];
  const r = await stateServerRig(t, { onExit: (code) => exits.push(code) });
  const client = r.connect();
  client.notify('exit!');
  client.notify('initialized', {});
  await client.call('status');
  assert.deepEqual(exits, []);
  client.notify('exit');
  await client.call('status');
  assert.deepEqual(exits, [1]);
  // Dropped, not silently: at debug, naming the method (docs/limits.md, docs/operations.md).
  const named = r.logs.filter((l) => l.level === 20 && l.method !== undefined).map((l) => l.method);
  assert.deepEqual(named.filter((m) => m !== 'status'), ['exit!', 'initialized'], 'the requests\' lines aside');
});

test('a closed connection: isClosed, its notifications dropped without a throw, a late onClose told at once', async (t) => {
  const r = await stateServerRig(t);
  const client = r.connect();
  await client.call('status');
  client.conn.notify('custom/open', { n: 1 });
  const open = await client.waitFor((m) => m.method === 'custom/open');
  assert.deepEqual(open.params, { n: 1 });
  assert.equal(client.conn.isClosed, false);
  client.end();
  await client.closed;
  assert.equal(client.conn.isClosed, true);
  client.conn.notify('custom/closed', { n: 2 });
  let told = false;
  client.conn.onClose(() => (told = true));
  assert.equal(told, true, 'a listener added after the close is told at once');
  await client.conn.idle();
  assert.equal(client.received.some((m) => m.method === 'custom/closed'), false);
});

test('the output flow: bytes and frames not yet taken by the peer are counted, and waited for', async (t) => {
  const r = await stateServerRig(t);
  const toServer = new PassThrough();
  // Nobody reads: what the server writes stays unsent past this small buffer.
  const fromServer = new PassThrough({ highWaterMark: 16 });
  t.after(() => {
    toServer.end();
    fromServer.destroy();
  });
  const framed = createFramedTransport(toServer, fromServer, { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES, initialFraming: 'ndjson' });
  const conn = r.server.connect(framed.reader, framed.writer, 'socket');
  // A notification is counted as unsent the moment it is written (at once).
  for (let i = 0; i < 4; i++) conn.notify('custom/big', { text: 'x'.repeat(1000) });
  assert.ok(conn.unsentBytes() > 1000, `unsent ${conn.unsentBytes()}`);
  assert.ok(conn.unsentFrames() >= 1, `frames ${conn.unsentFrames()}`);
  let drained = false;
  const waited = conn.whenUnsentAtMost(0).then(() => (drained = true));
  await roundTrip(r);
  assert.equal(drained, false, 'nothing was read yet');
  fromServer.resume();
  await waited;
  assert.deepEqual([conn.unsentBytes(), conn.unsentFrames()], [0, 0]);
});

test('a writer with no output flow (not this transport\'s): nothing unsent, nothing to wait for, open', async (t) => {
  const r = await stateServerRig(t);
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  t.after(() => {
    toServer.end();
    fromServer.destroy();
  });
  const conn = r.server.connect(new StreamMessageReader(toServer), new StreamMessageWriter(fromServer), 'socket');
  conn.notify('custom/a', {});
  assert.deepEqual([conn.unsentBytes(), conn.unsentFrames(), conn.isClosed], [0, 0, false]);
  await conn.whenUnsentAtMost(0);
});

test('a response from the client is not a request: nothing is owed for it', async (t) => {
  const r = await stateServerRig(t);
  const client = r.connect();
  // A response to nothing (the server sends no requests): vscode-jsonrpc drops it, nothing answers it.
  client.sendBody(JSON.stringify({ jsonrpc: '2.0', id: 99, result: null }));
  await client.call('status');
  await client.conn.idle();
});

test('what vscode-jsonrpc drops (a response with no id) is logged at debug, never answered', async (t) => {
  const r = await stateServerRig(t);
  const client = r.connect();
  client.sendBody(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: 1, message: 'nothing' } }));
  assert.ok(await client.call('status'));
  await client.conn.idle();
  assert.deepEqual(r.logs.filter((l) => l.rpc !== undefined).map((l) => [l.level, l.rpc]), [[20, 'error']]);
  assert.equal(client.received.filter((m) => m.id === null).length, 0);
});

test('dispose stops reading the input and lets go of the output (the stop disposes every connection)', async (t) => {
  const r = await stateServerRig(t);
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  t.after(() => {
    toServer.end();
    fromServer.destroy();
  });
  const framed = createFramedTransport(toServer, fromServer, { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES });
  r.server.connect(framed.reader, framed.writer, 'socket');
  assert.ok(toServer.listenerCount('data') > 0, 'read while served');
  assert.ok(fromServer.listenerCount('close') > 0, 'its output watched while served');
  r.server.disposeAll();
  assert.equal(toServer.listenerCount('data'), 0);
  // A disposed connection is not kept alive by an output stream that lives on.
  assert.deepEqual(['drain', 'finish', 'close'].map((e) => fromServer.listenerCount(e)), [0, 0, 0]);
});

test('a connection whose output fails is closed, and the failure logged at debug with the error', async (t) => {
  const r = await stateServerRig(t);
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  t.after(() => void toServer.end());
  const framed = createFramedTransport(toServer, fromServer, { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES });
  const conn = r.server.connect(framed.reader, framed.writer, 'socket');
  const closed = new Promise<void>((resolve) => conn.onClose(resolve));
  // The client left mid-reply: the write end fails as a socket's does.
  fromServer.destroy(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
  await closed;
  assert.deepEqual(r.logs.filter((l) => l.level === 20 && l.err !== undefined).map((l) => l.err?.code), ['EPIPE']);
});
