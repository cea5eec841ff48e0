// StateServer on its own (src/server/server.ts): a real store in a temp dir, connections over
// in-memory streams the test writes to and reads from, no socket and no Service. What it decides:
// initialize's answer and its `state` check, who may send shutdown and exit, what a connection's
// close tells (the feed, presence, the shutdown client gone), status' fields, backups one after
// another, and the store's commits passed on to the change feed.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import * as z from 'zod';
import type { MethodDef } from '../../src/protocol/define.js';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { PROTOCOL_VERSION } from '../../src/protocol/lifecycle.js';
import { methodList } from '../../src/protocol/table.js';
import { paramNames } from '../../src/server/server.js';
import { signal, stateServerRig } from '../helpers/state-server-rig.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const entry = (text: string) => ({ ts: '2025-01-01T00:00:00Z', role: 'user', text });

test('paramNames walks optional and default wrappers to the params object, at most 8 deep', () => {
  const def = (params: unknown) => ({ params }) as unknown as MethodDef;
  assert.deepEqual(paramNames(def(z.object({ a: z.string(), b: z.number() }))), ['a', 'b']);
  assert.deepEqual(paramNames(def(z.object({ a: z.string() }).optional().default({ a: 'x' }))), ['a']);
  let wrapped: z.ZodType = z.object({ deep: z.string() });
  for (let i = 0; i < 7; i++) wrapped = wrapped.optional();
  assert.deepEqual(paramNames(def(wrapped)), ['deep'], 'seven wrappers: the eighth look finds the object');
  assert.deepEqual(paramNames(def(wrapped.optional())), [], 'eight wrappers: past the walk');
  assert.deepEqual(paramNames(def(undefined)), []);
  assert.deepEqual(paramNames(def(z.string())), [], 'a params schema that is no object names none');
  assert.deepEqual(paramNames(def({})), [], 'a value that is no zod schema names none');
  assert.deepEqual(paramNames(def({ _zod: {} })), [], 'nor one with no definition');
});

test('initialize answers the server, the contract version, the state and every method with its params', async (t) => {
  const r = await stateServerRig(t);
  const client = r.connect();
  const got = (await client.call('initialize', {})) as Record<string, unknown>;
  assert.deepEqual(got, {
    serverInfo: { name: 'herrscher-state', version: '7.7.7' },
    protocolVersion: PROTOCOL_VERSION,
    statePath: r.store.statePath,
    capabilities: {
      methods: methodList.map((d) => d.method),
      params: Object.fromEntries(methodList.map((d) => [d.method, paramNames(d)])),
    },
  });
  assert.deepEqual(await client.call('initialize', {}), got, 'the same answer every time');
});

test('initialize with `state`: its own file (however named) is accepted, another is NotThisState', async (t) => {
  const root = tempDir('hs-server-');
  const dir = path.join(root, 'real');
  mkdirSync(dir);
  symlinkSync(dir, path.join(root, 'link'));
  const r = await stateServerRig(t, {}, dir);
  const client = r.connect();
  assert.equal(((await client.call('initialize', { state: r.store.statePath })) as { statePath: string }).statePath, r.store.statePath);
  assert.equal(((await client.call('initialize', { state: statePathIn(path.join(root, 'link')) })) as { statePath: string }).statePath, r.store.statePath);
  const other = statePathIn(path.join(root, 'other'));
  const refused = await client.request('initialize', { state: other });
  assert.equal(refused.error?.code, ErrorCodes.NotThisState);
  assert.ok(refused.error?.message.includes(r.store.statePath) && refused.error.message.includes(other), refused.error?.message);
});

test('without a lifecycle owner any connection may shut down; exit is 1 before shutdown and 0 after', async (t) => {
  const r = await stateServerRig(t);
  const client = r.connect('socket');
  client.notify('exit');
  assert.equal(await client.call('shutdown'), null);
  client.notify('exit');
  // The notifications are handled in order with the requests: a reply after them means both ran.
  await client.call('status');
  assert.deepEqual(r.exits, [1, 0]);
});

test('with the host on stdio as owner: the host may end the server, a socket client may not and its exit is ignored', async (t) => {
  const r = await stateServerRig(t, { lifecycleOwner: 'stdio' });
  const bridge = r.connect('socket');
  const refused = await bridge.request('shutdown');
  assert.equal(refused.error?.code, ErrorCodes.InvalidRequest);
  assert.match(refused.error?.message ?? '', /belong to the host on stdio/);
  bridge.notify('exit');
  const status = (await bridge.call('status')) as { stopping: boolean };
  assert.equal(status.stopping, false, 'the refused shutdown changed nothing');
  assert.deepEqual(r.exits, [], 'the exit of a socket client is ignored');
  // Not silently: a warn line names the transport it came on (docs/operations.md).
  assert.deepEqual(r.logs.filter((l) => l.level === 40).map((l) => l.transport), ['socket']);
  const host = r.connect('stdio');
  assert.equal(await host.call('shutdown'), null);
  host.notify('exit');
  await host.call('status');
  assert.deepEqual(r.exits, [0]);
});

test('on the shared server no connection may end it: shutdown refused saying why, exit ignored', async (t) => {
  const r = await stateServerRig(t, { lifecycleOwner: 'none', statesOpen: () => 3 });
  for (const transport of ['socket', 'stdio']) {
    const client = r.connect(transport);
    const refused = await client.request('shutdown');
    assert.equal(refused.error?.code, ErrorCodes.InvalidRequest);
    assert.match(refused.error?.message ?? '', /serves other clients too/);
    client.notify('exit');
    const status = (await client.call('status')) as { stopping: boolean; statesOpen: number };
    assert.deepEqual([status.stopping, status.statesOpen], [false, 3]);
  }
  assert.deepEqual(r.exits, []);
});

test('a connection that sent shutdown and closes tells onShutdownClientGone once; one that did not, never', async (t) => {
  let gone = 0;
  const told = signal();
  const r = await stateServerRig(t, {
    onShutdownClientGone: () => {
      gone++;
      told.resolve();
    },
  });
  const reader = r.connect();
  await reader.call('status');
  reader.end();
  await reader.closed;
  const owner = r.connect();
  assert.equal(await owner.call('shutdown'), null);
  assert.equal(gone, 0, 'not while it is open');
  owner.end();
  await told.promise;
  assert.equal(gone, 1);
});

test('presence: entered for each connection, left once a closed one has answered all it received', async (t) => {
  const seen: string[] = [];
  const left = signal();
  const r = await stateServerRig(t, {
    presence: {
      enter: () => seen.push('enter'),
      leave: () => {
        seen.push('leave');
        left.resolve();
      },
    },
  });
  await r.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  const client = r.connect();
  assert.deepEqual(seen, ['enter']);
  const id = client.send('transcript/append', { name: 'a', entry: entry('x') });
  client.end();
  assert.deepEqual((await client.response(id)).result, { seq: 0 }, 'what it sent before it closed is answered');
  await left.promise;
  assert.deepEqual(seen, ['enter', 'leave']);
});

test('status: identity, load and health as of now; connections counted as they come and go', async (t) => {
  const socket = '/run/somewhere/s.sock';
  const r = await stateServerRig(t, { socket: () => socket });
  const first = r.connect();
  await first.call('watch/subscribe', { sessions: true });
  const second = r.connect();
  const before = Date.now();
  const s = (await second.call('status')) as Record<string, unknown> & { counters: Record<string, unknown> };
  const after = Date.now();
  assert.equal(s.pid, process.pid);
  assert.equal(s.version, '7.7.7');
  assert.equal(s.protocolVersion, PROTOCOL_VERSION);
  assert.equal(s.statePath, r.store.statePath);
  assert.equal(s.socket, socket);
  assert.equal(s.durability, r.store.durability);
  assert.equal(s.connections, 2);
  assert.equal(s.subscriptions, 1);
  assert.equal('statesOpen' in s, false);
  assert.equal(s.revision, r.store.revision);
  assert.equal(s.walBytes, r.store.walBytes);
  assert.deepEqual([s.lastStorageError, s.checkpointFailing, s.stopping, s.healthy], [null, false, false, true]);
  const startedAt = Date.parse(s.startedAt as string);
  assert.equal(new Date(startedAt).toISOString(), s.startedAt);
  const uptime = s.uptimeMs as number;
  assert.ok(uptime >= before - startedAt && uptime <= after - startedAt, `uptime ${uptime} is the time since ${s.startedAt as string}`);
  assert.equal(s.counters.connectionsOpened, 2);
  assert.equal(s.counters.fsyncs, r.store.counters.fsyncs);
  assert.equal(s.counters.compactions, r.store.counters.compactions);
  assert.equal(s.counters.catchUps, 0);
  first.end();
  await first.closed;
  const now = (await second.call('status')) as { connections: number; subscriptions: number; counters: { connectionsOpened: number } };
  assert.deepEqual([now.connections, now.subscriptions, now.counters.connectionsOpened], [1, 0, 2], 'its subscriptions end with it; opened counts on');
});

test('status without a socket says null; a storage error without a code has none', async (t) => {
  const r = await stateServerRig(t);
  r.store.health.recordError('a write failed', new Error('no code here'));
  const s = (await r.connect().call('status')) as { socket: unknown; healthy: boolean; lastStorageError: Record<string, unknown> };
  assert.equal(s.socket, null);
  assert.equal(s.healthy, false);
  assert.deepEqual(Object.keys(s.lastStorageError).sort(), ['at', 'message']);
});

test('after shutdown status says stopping and unhealthy, writes are refused, a second shutdown is the same', async (t) => {
  const r = await stateServerRig(t);
  const client = r.connect();
  await client.call('session/add', { session: { name: 'a' } });
  const once = r.server.shutdown();
  assert.equal(r.server.shutdown(), once, 'idempotent: the same promise');
  await once;
  const s = (await client.call('status')) as { stopping: boolean; healthy: boolean };
  assert.deepEqual([s.stopping, s.healthy], [true, false]);
  const refused = await client.request('session/add', { session: { name: 'b' } });
  assert.equal(refused.error?.code, ErrorCodes.ShuttingDown);
});

test('a failed backup does not stop the next one; backups run one after another', async (t) => {
  const r = await stateServerRig(t);
  await r.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  const root = tempDir('hs-server-backup-');
  const file = path.join(root, 'a-file');
  writeFileSync(file, 'not a folder');
  const failed = r.server.backup(path.join(file, 'inside'));
  const next = r.server.backup(path.join(root, 'b1'));
  const third = r.server.backup(path.join(root, 'b2'));
  await assert.rejects(failed);
  const [b1, b2] = await Promise.all([next, third]);
  assert.equal(b1.revision, r.store.revision);
  assert.equal(b2.revision, r.store.revision);
});

test('the store\'s commits reach the feed: state, transcript and participant changes to their subscribers', async (t) => {
  const r = await stateServerRig(t);
  const client = r.connect();
  await client.call('watch/subscribe', { sessions: true, transcripts: ['a'], participants: ['a'] });
  await r.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  await r.store.appendTranscript('a', entry('hi'));
  await r.store.appendParticipant('a', 'u1');
  await client.waitFor((m) => m.method === 'session/didChange');
  const appended = await client.waitFor((m) => m.method === 'transcript/didAppend');
  assert.equal((appended.params as { name: string }).name, 'a');
  const added = await client.waitFor((m) => m.method === 'participants/didAdd');
  assert.equal((added.params as { name: string }).name, 'a');
});

test('idle() waits for every connection\'s answers; disposeAll ends them', async (t) => {
  const r = await stateServerRig(t);
  await r.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  const client = r.connect();
  const ids = [0, 1, 2].map((i) => client.send('transcript/append', { name: 'a', entry: entry(`e${i}`) }));
  await r.server.idle();
  // idle() resolves once the answers are written: every append is in the store by then.
  assert.equal((await r.store.readTranscript('a')).length, 3);
  const replies = await Promise.all(ids.map((id) => client.response(id)));
  assert.deepEqual(replies.map((m) => m.result), [{ seq: 0 }, { seq: 1 }, { seq: 2 }]);
  r.server.disposeAll();
  const s = r.server.status();
  assert.equal(s.connections, 0);
});

test('a returning subscriber: the store\'s revision and epoch answered, the document resent for another epoch, missed entries read from the file, a name no file can have skipped', async (t) => {
  const r = await stateServerRig(t);
  await r.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  await r.store.appendTranscript('a', entry('one'));
  await r.store.appendTranscript('a', entry('two'));
  const client = r.connect();
  const got = (await client.call('watch/subscribe', { sessions: true, transcripts: '*', since: { epoch: 'an earlier run', revision: 1, transcripts: { a: -1, 'x/y': -1 } } })) as { subscription: string; revision: number; epoch: string };
  assert.deepEqual([got.revision, got.epoch], [r.store.revision, r.store.epoch]);
  const resync = await client.waitFor((m) => m.method === 'state/resync');
  assert.deepEqual(resync.params, { subscription: got.subscription, revision: r.store.revision, epoch: r.store.epoch, state: r.store.getState() });
  const texts = [];
  for (let i = 0; i < 2; i++) texts.push(((await client.waitFor((m) => m.method === 'transcript/didAppend')).params as { entry: { text: string } }).entry.text);
  assert.deepEqual(texts, ['one', 'two']);
  // Once the catch-up is over, a live append comes next; nothing was logged as an error.
  await r.store.appendTranscript('a', entry('three'));
  assert.equal(((await client.waitFor((m) => m.method === 'transcript/didAppend')).params as { entry: { text: string } }).entry.text, 'three');
  assert.deepEqual(r.logs.filter((l) => l.level >= 50), []);
  assert.deepEqual(await client.call('watch/unsubscribe', { subscription: got.subscription }), { unsubscribed: true });
  assert.equal(r.server.status().subscriptions, 0);
});

test('backup and rpc.discover over the wire: the copy at the revision now, the OpenRPC document of this version', async (t) => {
  const r = await stateServerRig(t);
  await r.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  const client = r.connect();
  const dest = path.join(tempDir('hs-server-backup-'), 'copy');
  const backup = (await client.call('backup', { dest })) as { revision: number; dest: string };
  assert.equal(backup.revision, r.store.revision);
  const doc = (await client.call('rpc.discover')) as { openrpc: string; info: { version: string } };
  assert.equal(doc.info.version, '7.7.7');
  assert.deepEqual(await client.call('rpc.discover'), doc);
});

test('a connection that sent shutdown closing on a server that wants no word of it: nothing breaks', async (t) => {
  const r = await stateServerRig(t);
  const client = r.connect();
  assert.equal(await client.call('shutdown'), null);
  client.end();
  await client.closed;
  assert.equal(((await r.connect().call('status')) as { connections: number }).connections, 1);
});

test('each request is logged at debug with its method, its duration and its connection (README: Logs)', async (t) => {
  const r = await stateServerRig(t);
  const a = r.connect('socket');
  const b = r.connect('stdio');
  await a.call('status');
  await b.call('session/list', {});
  const requests = r.logs.filter((l) => l.level === 20 && typeof l.us === 'number');
  assert.deepEqual(requests.map((l) => [l.method, l.transport]), [['status', 'socket'], ['session/list', 'stdio']]);
  assert.equal(typeof requests[0]?.conn, 'number');
  assert.notEqual(requests[0]?.conn, requests[1]?.conn, 'two connections, two ids');
});

test('a returning subscriber whose missed entries cannot be read: its subscription ends with watch/overflow, the read error logged at error with err', async (t) => {
  const r = await stateServerRig(t);
  await r.store.addSession({ name: 'a', channelID: '', type: '', cmd: '' });
  await r.store.appendTranscript('a', entry('one'));
  // A folder where the transcript's file was: its pages cannot be read.
  const file = path.join(r.dir, 'transcripts', 'a.jsonl');
  rmSync(file);
  mkdirSync(file);
  const client = r.connect();
  const got = (await client.call('watch/subscribe', { transcripts: ['a'], since: { epoch: r.store.epoch, revision: r.store.revision, transcripts: { a: -1 } } })) as { subscription: string };
  const overflow = await client.waitFor((m) => m.method === 'watch/overflow');
  assert.equal((overflow.params as { subscription: string }).subscription, got.subscription);
  const errors = r.logs.filter((l) => l.level === 50);
  assert.equal(errors.length, 1, JSON.stringify(r.logs));
  assert.ok(errors[0]?.err, 'the error is carried as err');
});
