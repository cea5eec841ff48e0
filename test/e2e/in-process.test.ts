// The in-process harness (helpers/server.ts) itself: both framings and the typed client reach the
// same store, `exit` and stdin EOF stop it with the codes `serve` uses, its logs are captured, and
// close() waits for the store so the dir can be opened again at once (the lock is released).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Store } from '../../src/store/store.js';
import { startServer } from '../helpers/server.js';

test('the typed client and raw clients in both framings share one store', async (t) => {
  const srv = await startServer(t);
  const client = await srv.client();
  await client.sessionAdd({ session: { name: 'a' } });
  for (const framing of ['lsp', 'ndjson'] as const) {
    const raw = await srv.raw(framing);
    const found = (await raw.call('session/find', { name: 'a' })) as { session: { name: string } };
    assert.equal(found.session.name, 'a', `over ${framing}`);
    assert.deepEqual(raw.garbage, []);
  }
  const doc = JSON.parse(readFileSync(srv.state, 'utf8')) as { sessions: { name: string }[] };
  assert.deepEqual(doc.sessions.map((s) => s.name), ['a'], 'the write is in state.json');
});

test('close() awaits the store: the lock is free and the writes are there for the next open', async (t) => {
  const srv = await startServer(t);
  const client = await srv.client('ndjson');
  await client.sessionAdd({ session: { name: 'a' } });
  const pending = Array.from({ length: 50 }, (_, i) => client.transcriptAppend({ name: 'a', entry: { ts: 't', role: 'user', text: `m${i}` } }));
  await Promise.all(pending);
  await srv.close();
  assert.ok(!existsSync(srv.socket), 'the socket file is removed');
  const again = await startServer(t, { dir: srv.dir });
  const c2 = await again.client();
  const page = await c2.transcriptRead({ name: 'a' });
  assert.equal(page.entries.length, 50);
  await again.close();
  const store = await Store.open(again.state);
  await store.close();
});

test('shutdown then exit stops with 0; exit alone with 1; stdio EOF with 0', async (t) => {
  const a = await startServer(t, { lifecycleOwner: 'stdio' });
  const host = a.stdio('lsp');
  assert.equal((await host.request('shutdown')).result, null);
  host.notify('exit');
  assert.equal(await a.exited, 0);
  await host.ended;

  const b = await startServer(t);
  const raw = await b.raw('ndjson');
  raw.notify('exit');
  assert.equal(await b.exited, 1);

  const c = await startServer(t, { lifecycleOwner: 'stdio' });
  const host2 = c.stdio('ndjson');
  assert.deepEqual(await host2.call('session/list'), { sessions: [] });
  host2.end();
  assert.equal(await c.exited, 0);
});

test('a socket client may not end a server whose host is on stdio', async (t) => {
  const srv = await startServer(t, { lifecycleOwner: 'stdio' });
  srv.stdio('lsp');
  const raw = await srv.raw('lsp');
  const reply = await raw.request('shutdown');
  assert.equal(reply.error?.code, -32600);
  raw.notify('exit');
  assert.ok((await raw.request('session/list')).result, 'still serving after a refused exit');
  assert.ok(srv.logs.some((l) => l.level === 40 && l.msg?.includes('exit from a client that does not own the server')), 'the ignored exit is logged');
});
