// Requests of one connection apply in arrival order: a client that pipelines a write and then a
// read sees its write, and reads are not starved by a stream of writes behind them. (In-process
// server over its real socket.)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startServer } from '../helpers/server.js';

test('a read pipelined right behind writes on the same connection sees every one of them', async (t) => {
  const server = await startServer(t);
  const c = await server.raw('ndjson');
  c.send('session/add', { session: { name: 'a', type: 'text', cmd: 'c' } });
  for (let i = 0; i < 20; i++) c.send('transcript/append', { name: 'a', entry: { ts: `t${i}`, role: 'user', text: `m${i}` } });
  c.send('session/setResumeToken', { name: 'a', resumeToken: 'tok' });
  const find = c.send('session/find', { name: 'a' });
  const read = c.send('transcript/read', { name: 'a' });
  const found = (await c.response(find)).result as { session: { resumeToken?: string } };
  assert.equal(found.session.resumeToken, 'tok');
  const page = (await c.response(read)).result as { entries: { text: string }[]; firstSeq: number };
  assert.deepEqual(page.entries.map((e) => e.text), Array.from({ length: 20 }, (_, i) => `m${i}`));
  assert.equal(page.firstSeq, 0);
});

test('a read waits only for the writes sent before it, not for those sent after', async (t) => {
  const server = await startServer(t);
  const c = await server.raw('lsp');
  await c.call('session/add', { session: { name: 'a', type: 'text', cmd: 'c' } });
  c.send('transcript/append', { name: 'a', entry: { ts: 't0', role: 'user', text: 'before' } });
  const last = c.send('transcript/last', { name: 'a' });
  const after = Array.from({ length: 200 }, (_, i) => c.send('transcript/append', { name: 'a', entry: { ts: `u${i}`, role: 'user', text: 'after' } }));
  assert.equal(((await c.response(last)).result as { ts: string }).ts, 't0', 'the read saw the write before it');
  const replies = await Promise.all(after.map((id) => c.response(id)));
  assert.deepEqual(replies.map((r) => (r.result as { seq: number }).seq), Array.from({ length: 200 }, (_, i) => i + 1));
});
