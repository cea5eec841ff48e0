// NDJSON framing end to end: raw lines in, a real vscode-jsonrpc connection in the middle.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FrameHandlers } from '../../src/transport/frame-decoder.js';
import { encodeNdjson, NdjsonDecoder } from '../../src/transport/ndjson.js';
import { bounded, memoryPeer, ndjson, request, writeInPieces } from './frames.js';

test('an NDJSON request is answered with one NDJSON line', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson');
  toServer.write(ndjson(request(1, { hello: 'world' })));
  const [reply] = await replies.take(1);
  assert.deepEqual(reply, { jsonrpc: '2.0', id: 1, result: { hello: 'world' } });
  assert.match(replies.raw, /^\{[^\n]*\}\n$/);
  assert.equal(server.transport.framing(), 'ndjson');
  server.connection.dispose();
});

test('many requests in one chunk are each answered', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson');
  const count = 500;
  toServer.write(ndjson(...Array.from({ length: count }, (_, i) => request(i + 1))));
  const got = await replies.take(count);
  assert.deepEqual(
    got.map((r) => r.id).sort((a, b) => Number(a) - Number(b)),
    Array.from({ length: count }, (_, i) => i + 1),
  );
  server.connection.dispose();
});

test('a request split into 1-byte chunks is answered', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson');
  await writeInPieces(toServer, Buffer.from(ndjson(request(7, { split: 'yes' }))));
  const [reply] = await replies.take(1);
  assert.deepEqual(reply?.result, { split: 'yes' });
  server.connection.dispose();
});

test('multibyte UTF-8 split inside its code points arrives intact', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson');
  const text = 'é–😀日本';
  await writeInPieces(toServer, Buffer.from(ndjson(request(1, { text }))), 1);
  const [reply] = await replies.take(1);
  assert.deepEqual(reply?.result, { text });
  server.connection.dispose();
});

test('U+2028 and U+2029 leave as escapes, so a line splitter never breaks the reply', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson');
  toServer.write(ndjson(request(1, { text: 'a\u2028b\u2029c' })));
  const [reply] = await replies.take(1);
  assert.deepEqual(reply?.result, { text: 'a\u2028b\u2029c' });
  assert.ok(!/[\u2028\u2029]/.test(replies.raw), 'raw output carries the characters unescaped');
  assert.ok(replies.raw.includes('a\\u2028b\\u2029c'));
  server.connection.dispose();
});

test('CRLF line ends and blank lines between messages are tolerated', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson');
  toServer.write(`\r\n  \n${request(1)}\r\n\r\n\n${request(2)}\r\n`);
  const got = await replies.take(2);
  assert.deepEqual(got.map((r) => r.id), [1, 2]);
  assert.deepEqual(server.protocolErrors, []);
  server.connection.dispose();
});

test('a last line without its newline is still answered when the input ends', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson');
  toServer.end(request(9));
  const [reply] = await replies.take(1);
  assert.equal(reply?.id, 9);
  server.connection.dispose();
});

test('encodeNdjson writes one line ending in a newline, with no raw line separators', bounded, () => {
  const line = encodeNdjson({ s: 'x\u2028y\u2029z\u0085' });
  assert.equal(line, '{"s":"x\\u2028y\\u2029z\\u0085"}\n');
  assert.deepEqual(JSON.parse(line), { s: 'x\u2028y\u2029z\u0085' });
});

test('the decoder joins a line that arrives in many chunks without losing a byte', bounded, () => {
  const bodies: string[] = [];
  const handlers: FrameHandlers = { body: (b) => bodies.push(b.toString()), fatal: (e) => assert.fail(e.message) };
  const decoder = new NdjsonDecoder(1000, handlers);
  const input = Buffer.from('{"a":1}\n{"bb":22}\n{"ccc":333}\n');
  for (let i = 0; i < input.length; i += 3) decoder.push(input.subarray(i, i + 3));
  assert.deepEqual(bodies, ['{"a":1}', '{"bb":22}', '{"ccc":333}']);
});

test('the decoder accepts a line of exactly the limit, also with a CR before its newline', bounded, () => {
  const bodies: number[] = [];
  const decoder = new NdjsonDecoder(10, { body: (b) => bodies.push(b.length), fatal: (e) => assert.fail(e.message) });
  decoder.push(Buffer.from('"12345678"'));
  decoder.push(Buffer.from('\r'));
  decoder.push(Buffer.from('\n"12345678"\n'));
  assert.deepEqual(bodies, [10, 10]);
});
