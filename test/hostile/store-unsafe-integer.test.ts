// Hostile values: session/add keeps unknown fields and writes them back, so each must come back
// exactly, after a restart too. Integer literals beyond 2^53-1 are parsed exactly (bigints), on
// the wire and in the file, so 9007199254740993 is never rounded to ...992.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { openIn, reopen, storeError } from '../helpers/store.js';
import { startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

test('addSession keeps an unknown field holding integers beyond 2^53-1 exactly, across a restart', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  const extra = { big: 9007199254740993n, neg: -(2n ** 70n), nested: { list: [1, 2n ** 64n - 1n] } };
  await store.addSession({ name: 'a', channelID: '', type: '', cmd: '', ...extra });
  store = await reopen(store);
  const row = store.findSession('a') as Record<string, unknown>;
  assert.deepEqual([row.big, row.neg, row.nested], [extra.big, extra.neg, extra.nested]);
  assert.match(readFileSync(statePathIn(dir), 'utf8'), /"big": 9007199254740993,\n\s+"neg": -1180591620717411303424,/);
});

test('addSession refuses an unknown field holding a number beyond float64, naming the field, and writes nothing', async (t) => {
  const store = await openIn(tempDir());
  t.after(() => store.close());
  await assert.rejects(
    () => store.addSession({ name: 'a', channelID: '', type: '', cmd: '', f: Number.POSITIVE_INFINITY }),
    storeError('invalid-input', ['session.f']),
  );
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

test('session/add of an unknown field holding 9007199254740993 answers it exactly, and so does the next start', async (t) => {
  const srv = await startServer(t);
  const raw = await srv.raw('ndjson');
  raw.sendBody('{"jsonrpc":"2.0","id":1,"method":"session/add","params":{"session":{"name":"a","big":9007199254740993,"token_cap":18446744073709551615}}}');
  const reply = await raw.response(1);
  assert.equal(reply.error, undefined, reply.error?.message);
  await srv.close();
  const again = await startServer(t, { dir: srv.dir });
  const raw2 = await again.raw('ndjson');
  const found = await raw2.call('session/find', { name: 'a' }) as { session: Record<string, unknown> };
  assert.deepEqual([found.session.token_cap, found.session.big], [18446744073709551615n, 9007199254740993n]);
});

test('a float64 Go writes as plain digits past 2^53 (1e20) is taken as that double, in an entry and a cap', async (t) => {
  const srv = await startServer(t);
  const raw = await srv.raw('ndjson');
  raw.sendBody('{"jsonrpc":"2.0","id":1,"method":"session/add","params":{"session":{"name":"a","cost_cap":100000000000000000000}}}');
  assert.equal((await raw.response(1)).error, undefined);
  raw.sendBody('{"jsonrpc":"2.0","id":2,"method":"transcript/append","params":{"name":"a","entry":{"ts":"t","role":"r","text":"x","cost":100000000000000000000}}}');
  assert.equal((await raw.response(2)).error, undefined);
  // Answered as the same digits (an exact reader, as this test's, sees a bigint; Go a float64).
  const page = await raw.call('transcript/read', { name: 'a' }) as { entries: { cost: unknown }[] };
  assert.equal(page.entries[0]?.cost, 10n ** 20n);
  const found = await raw.call('session/find', { name: 'a' }) as { session: { cost_cap: unknown } };
  assert.equal(found.session.cost_cap, 10n ** 20n);
  assert.match(readFileSync(path.join(srv.dir, 'transcripts', 'a.jsonl'), 'utf8'), /"cost":100000000000000000000\}/);
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
