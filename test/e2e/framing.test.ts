// Framing as real clients produce it, on one socket: detected per connection from the first
// byte, answered in the client's framing; LSP headers as editors send them, NDJSON as other
// languages' encoders write it; messages split anywhere or packed together; the size limit exact.
// Against the in-process server (helpers/server.ts): the socket and transport are the real ones.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Ctx } from '../helpers/server.js';
import { startServer } from '../helpers/server.js';
import type { Framing, RawClient } from '../helpers/wire.js';
import { frame } from '../helpers/wire.js';

/** A safety net only: a hung reply fails the test instead of the run. Generous: on a 2-core machine under load 20, correct tests took over 30 s. */
const TIMEOUT = 120_000;
const LIMIT = 4096;

/** An in-process server; `connect(framing)` is a raw client on a fresh socket connection. */
async function serve(t: Ctx, maxMessageBytes?: number) {
  const server = await startServer(t, { maxMessageBytes });
  return { connect: server.raw };
}

const qualify = (id: number, name: string): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'state/qualifiedName', params: { name } });

async function assertQualified(rpc: RawClient, id: number, name: string): Promise<void> {
  const reply = await rpc.response(id);
  assert.deepEqual(reply, { jsonrpc: '2.0', id, result: { qualifiedName: name } }, `reply ${id}`);
}

test('one socket serves LSP and NDJSON connections side by side, each answered in its own framing', { timeout: TIMEOUT }, async (t) => {
  const server = await serve(t);
  const lsp = await server.connect('lsp');
  const ndjson = await server.connect('ndjson');
  lsp.sendBody(qualify(1, 'from-lsp'));
  ndjson.sendBody(qualify(1, 'from-ndjson'));
  await assertQualified(lsp, 1, 'from-lsp');
  await assertQualified(ndjson, 1, 'from-ndjson');
  assert.deepEqual([lsp.garbage, ndjson.garbage], [[], []], 'each reply parsed strictly in the framing of its connection');
});

test('LSP headers as editors send them: Content-Type, any case, the length counted in UTF-8 bytes', { timeout: TIMEOUT }, async (t) => {
  const server = await serve(t);
  const rpc = await server.connect('lsp');
  const b1 = qualify(1, 'plain');
  const b2 = qualify(2, 'lower');
  const b3 = qualify(3, 'h\u00e9 \u{1f600}');
  rpc.writeBytes(`Content-Length: ${Buffer.byteLength(b1)}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n${b1}`);
  rpc.writeBytes(`content-length: ${Buffer.byteLength(b2)}\r\n\r\n${b2}`);
  rpc.writeBytes(`Content-Length: ${Buffer.byteLength(b3)}\r\n\r\n${b3}`);
  await assertQualified(rpc, 1, 'plain');
  await assertQualified(rpc, 2, 'lower');
  await assertQualified(rpc, 3, 'h\u00e9 \u{1f600}');
});

test('NDJSON as encoders write it: CRLF line ends, blank lines and leading whitespace are accepted', { timeout: TIMEOUT }, async (t) => {
  const server = await serve(t);
  const rpc = await server.connect('ndjson');
  rpc.writeBytes(`\n  ${qualify(1, 'one')}\r\n\r\n\n${qualify(2, 'two')}\n   \n${qualify(3, 'three')}\r\n`);
  await assertQualified(rpc, 1, 'one');
  await assertQualified(rpc, 2, 'two');
  await assertQualified(rpc, 3, 'three');
});

for (const framing of ['lsp', 'ndjson'] as Framing[]) {
  test(`${framing}: a message split into single bytes and messages packed into one write are each answered once`, { timeout: TIMEOUT }, async (t) => {
    const server = await serve(t);
    const rpc = await server.connect(framing);
    const split = frame(framing, qualify(1, 'split \u00e9'));
    for (let i = 0; i < split.length; i++) {
      rpc.writeBytes(split.subarray(i, i + 1));
      await new Promise((r) => setImmediate(r));
    }
    await assertQualified(rpc, 1, 'split \u00e9');
    rpc.writeBytes(Buffer.concat([2, 3, 4].map((id) => frame(framing, qualify(id, `packed-${id}`)))));
    for (const id of [2, 3, 4]) await assertQualified(rpc, id, `packed-${id}`);
    assert.equal(rpc.received.length, 4, 'one reply per message');
  });

  test(`${framing}: a message of exactly --max-message-bytes is accepted, one byte more is answered -32040`, { timeout: TIMEOUT }, async (t) => {
    const server = await serve(t, LIMIT);
    const rpc = await server.connect(framing);
    const name = (id: number, bytes: number): string => 'x'.repeat(bytes - Buffer.byteLength(qualify(id, '')));
    const exact = qualify(1, name(1, LIMIT));
    assert.equal(Buffer.byteLength(exact), LIMIT);
    rpc.sendBody(exact);
    await assertQualified(rpc, 1, name(1, LIMIT));
    const over = qualify(2, name(2, LIMIT + 1));
    assert.equal(Buffer.byteLength(over), LIMIT + 1);
    rpc.sendBody(over);
    const reply = await rpc.waitFor((m) => m.id !== 1);
    assert.equal(reply.error?.code, -32040, JSON.stringify(reply));
    await rpc.ended;
  });
}
