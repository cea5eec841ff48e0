// Wire garbage that already holds (an earlier attack run: random bytes, Content-Length lies, deep
// nesting, invalid UTF-8, `__proto__` keys), kept here so none comes back: each is answered as
// the rules say, the files do not change, and the server goes on serving.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { Framing } from '../helpers/wire.js';
import { frame } from '../helpers/wire.js';
import { LIMIT, wireServer } from './wire-server.js';

const stateBytes = (dir: string): string => readFileSync(path.join(dir, 'state.json'), 'utf8');

for (const framing of ['ndjson', 'lsp'] as Framing[]) {
  test(`random bytes in well-delimited frames get -32700 or -32600 with id null, and the connection goes on (${framing})`, LIMIT, async (t) => {
    const w = await wireServer(t);
    const c = await w.connect(framing);
    await c.call('session/add', { session: { name: 'a' } });
    const before = stateBytes(w.dir);
    for (let i = 0; i < 50; i++) {
      let body = randomBytes(1 + (i % 40));
      if (framing === 'ndjson') body = Buffer.from(body.filter((b) => b !== 0x0a && b !== 0x20 && b !== 0x09 && b !== 0x0d));
      if (body.length === 0) continue;
      c.writeBytes(frame(framing, body));
    }
    assert.ok(await c.call('session/list', {}));
    const errors = c.received.filter((m) => m.error !== undefined);
    assert.ok(errors.length > 0);
    for (const e of errors) {
      assert.ok(e.error?.code === -32700 || e.error?.code === -32600, JSON.stringify(e));
      assert.equal(e.id, null);
    }
    assert.equal(stateBytes(w.dir), before);
  });

  test(`invalid UTF-8 in a request is -32700, never stored as U+FFFD (${framing})`, LIMIT, async (t) => {
    const w = await wireServer(t);
    const c = await w.connect(framing);
    await c.call('session/add', { session: { name: 'a' } });
    const body = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":5,"method":"transcript/append","params":{"name":"a","entry":{"ts":"1","role":"user","text":"'),
      Buffer.from([0xc3, 0x28, 0xff]),
      Buffer.from('"}}}'),
    ]);
    c.writeBytes(frame(framing, body));
    const reply = await c.waitFor((m) => m.error !== undefined);
    assert.equal(reply.error?.code, -32700);
    assert.match(reply.error?.message ?? '', /UTF-8/);
    assert.deepEqual((await c.call('transcript/read', { name: 'a' }) as { entries: unknown[] }).entries, []);
  });

  // 50 times the depth that overflowed the stack of the encoder and zod (2 000 levels; the params
  // bound is 512): parsing a million levels cost ~1.4 CPU-s a framing and showed nothing more.
  test(`a message nested 100 000 deep is refused without a crash (${framing})`, LIMIT, async (t) => {
    const w = await wireServer(t);
    const c = await w.connect(framing);
    const depth = 100_000;
    c.writeBytes(frame(framing, `{"jsonrpc":"2.0","id":1,"method":"session/list","params":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}}`));
    const reply = await c.waitFor((m) => m.error !== undefined);
    assert.ok([-32700, -32602].includes(reply.error?.code as number), JSON.stringify(reply.error));
    assert.deepEqual(await c.call('session/list', {}), { sessions: [] });
  });

  test(`__proto__ keys in params pollute nothing and are refused or kept as plain data (${framing})`, LIMIT, async (t) => {
    const w = await wireServer(t);
    const c = await w.connect(framing);
    // At the top of params (a strict object: refused) and inside a session row (kept unknown fields).
    c.writeBytes(frame(framing, '{"jsonrpc":"2.0","id":1,"method":"session/add","params":{"__proto__":{"polluted":1},"session":{"name":"a"}}}'));
    c.writeBytes(frame(framing, '{"jsonrpc":"2.0","id":2,"method":"session/add","params":{"session":{"name":"b","__proto__":{"polluted":2},"constructor":{"prototype":{"polluted":3}}}}}'));
    const [top, row] = [await c.response(1), await c.response(2)];
    assert.equal(top.error?.code, -32602, JSON.stringify(top));
    assert.ok(row.error === undefined || row.error.code === -32602, JSON.stringify(row));
    assert.equal(({} as { polluted?: unknown }).polluted, undefined, 'Object.prototype is untouched');
    const list = (await c.call('session/list', {})) as { sessions: Record<string, unknown>[] };
    assert.deepEqual(list.sessions.map((s) => s.name), row.error === undefined ? ['b'] : []);
    for (const s of list.sessions) {
      assert.equal(Object.getPrototypeOf(s), Object.prototype);
      assert.equal((s as { polluted?: unknown }).polluted, undefined);
    }
    if (row.error === undefined) assert.equal((JSON.parse(stateBytes(w.dir)) as { sessions: unknown[] }).sessions.length, 1);
  });
}

const lspLies: [string, string][] = [
  ['a Content-Length larger than the limit', `Content-Length: ${2 * 1024 * 1024}\r\n\r\n{}`],
  ['a Content-Length that is not a number', 'Content-Length: ten\r\n\r\n{}'],
  ['a negative Content-Length', 'Content-Length: -5\r\n\r\n{}'],
  ['two different Content-Lengths', 'Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}'],
  ['no Content-Length', 'Content-Type: application/json\r\n\r\n{}'],
  ['a header line without a colon', 'Content-Length 2\r\n\r\n{}'],
  ['a header block that never ends', `Content-Length: 2\r\n${'X-Pad: y\r\n'.repeat(2000)}`],
];

for (const [what, bytes] of lspLies) {
  test(`LSP: ${what} gets -32040 and the connection is closed; others go on`, LIMIT, async (t) => {
    const w = await wireServer(t);
    const c = await w.connect('lsp');
    c.writeBytes(bytes);
    const reply = await c.waitFor((m) => m.error !== undefined);
    assert.equal(reply.error?.code, -32040, JSON.stringify(reply));
    await c.ended;
    const other = await w.connect('lsp');
    assert.deepEqual(await other.call('session/list', {}), { sessions: [] });
  });
}

test('LSP: a Content-Length shorter than the body makes the rest a frame of its own: answered, never applied half', LIMIT, async (t) => {
  const w = await wireServer(t);
  const c = await w.connect('lsp');
  const body = '{"jsonrpc":"2.0","id":1,"method":"session/add","params":{"session":{"name":"a"}}}';
  c.writeBytes(`Content-Length: 20\r\n\r\n${body}`);
  const reply = await c.waitFor((m) => m.error !== undefined);
  assert.ok([-32700, -32040].includes(reply.error?.code as number), JSON.stringify(reply));
  const other = await w.connect('lsp');
  assert.deepEqual(await other.call('session/list', {}), { sessions: [] });
});

test('LSP: a Content-Length longer than the body, then EOF: nothing applied, the server goes on', LIMIT, async (t) => {
  const w = await wireServer(t);
  const c = await w.connect('lsp');
  const body = '{"jsonrpc":"2.0","id":1,"method":"session/add","params":{"session":{"name":"a"}}}';
  c.writeBytes(`Content-Length: ${body.length + 100}\r\n\r\n${body}`);
  c.end();
  await w.closed(0);
  const other = await w.connect('ndjson');
  assert.deepEqual(await other.call('session/list', {}), { sessions: [] });
});
