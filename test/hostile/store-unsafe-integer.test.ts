// Hostile values: session/add keeps unknown fields and writes them back, so one it cannot hold
// exactly must be refused there, not rounded into the file (where the next start refuses it).
// JSON.parse has already rounded 9007199254740993 to ...992 by the time the store sees it: every
// integer beyond 2^53-1 is refused (-32602, naming the field), whatever it was on the wire.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { openIn, reopen, storeError } from '../helpers/store.js';
import { startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

test('addSession refuses an unknown field holding an integer beyond 2^53-1 (invalid-input, naming the field) and writes nothing', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  for (const [extra, field] of [
    [{ big: 9007199254740993 }, 'session.big'],
    [{ big: -(2 ** 60) }, 'session.big'],
    [{ nested: { list: [1, 2 ** 53] } }, 'session.nested.list[1]'],
  ] as const) {
    await assert.rejects(
      () => store.addSession({ name: 'a', channelID: '', type: '', cmd: '', ...extra }),
      storeError('invalid-input', [field, 'beyond 2^53-1']),
      field,
    );
  }
  await store.flush();
  assert.deepEqual(store.listSessions(), []);
});

test('an unknown field holding a safe integer or a fraction is kept exactly and the next start loads it', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession({ name: 'a', channelID: '', type: '', cmd: '', max: 9007199254740991, f: 1.5, e: 1e-300 });
  store = await reopen(store);
  const row = store.findSession('a') as Record<string, unknown>;
  assert.deepEqual([row.max, row.f, row.e], [9007199254740991, 1.5, 1e-300]);
  assert.match(readFileSync(statePathIn(dir), 'utf8'), /"max": 9007199254740991/);
});

test('session/add of an unknown field holding 9007199254740993 answers -32602 naming the field, and the next start succeeds', async (t) => {
  const srv = await startServer(t);
  const raw = await srv.raw('ndjson');
  raw.sendBody('{"jsonrpc":"2.0","id":1,"method":"session/add","params":{"session":{"name":"a","big":9007199254740993}}}');
  const reply = await raw.response(1);
  assert.equal(reply.error?.code, -32602, JSON.stringify(reply));
  assert.match(reply.error?.message ?? '', /session\.big/);
  await raw.call('session/add', { session: { name: 'b' } });
  await srv.close();
  const again = await startServer(t, { dir: srv.dir });
  const client = await again.client();
  const state = await client.call('state/get', {}) as { state: { sessions: { name: string }[] } };
  assert.deepEqual(state.state.sessions.map((s) => s.name), ['b']);
});

test('addSession refuses an unknown field whose key is a known field in another case, which the next start would read as that field', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  for (const key of ['Name', 'INCARNATION', 'channelid']) {
    await assert.rejects(
      () => store.addSession({ name: 'a', channelID: '', type: '', cmd: '', [key]: 'other' }),
      storeError('invalid-input', [`session.${key}`, 'case']),
      key,
    );
  }
  await store.addSession({ name: 'a', channelID: '', type: '', cmd: '', nickname: 'kept' });
  store = await reopen(store);
  assert.deepEqual(store.listSessions().map((s) => [s.name, (s as Record<string, unknown>).nickname]), [['a', 'kept']]);
});
