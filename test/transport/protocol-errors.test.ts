// "Answers, not silence": every malformed input gets its JSON-RPC error, and only well-formed
// messages reach the connection.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { createFramedTransport } from '../../src/transport/framing.js';
import { bounded, lsp, memoryPeer, ndjson, request } from './frames.js';

test('an unparsable NDJSON line is answered with -32700 and the next request still is', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson');
  toServer.write(ndjson('{"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {', request(2)));
  const got = await replies.take(2);
  const parse = got.find((r) => r.id === null);
  assert.equal(parse?.error?.code, ErrorCodes.ParseError);
  assert.match(parse?.error?.message ?? '', /^parse error: /);
  assert.equal(got.find((r) => r.id === 2)?.result !== undefined, true);
  assert.deepEqual(server.protocolErrors.map((e) => e.code), [ErrorCodes.ParseError]);
  server.connection.dispose();
});

test('an unparsable LSP body is answered with -32700 and the next request still is', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('lsp');
  toServer.write(lsp('{not json}') + lsp(request(2)));
  const got = await replies.take(2);
  assert.equal(got.find((r) => r.id === null)?.error?.code, ErrorCodes.ParseError);
  assert.deepEqual(got.find((r) => r.id === 2)?.result, { n: 2 });
  server.connection.dispose();
});

test('a body that is not valid UTF-8 is answered with -32700', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson');
  toServer.write(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"echo","params":["'), Buffer.from([0xc3, 0x28]), Buffer.from('"]}\n')]));
  const [reply] = await replies.take(1);
  assert.equal(reply?.error?.code, ErrorCodes.ParseError);
  assert.match(reply?.error?.message ?? '', /not valid UTF-8/);
  assert.deepEqual(server.handled, []);
  server.connection.dispose();
});

test('garbage as the very first line is read as NDJSON and answered with -32700', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson');
  toServer.write(ndjson('hello?', request(1)));
  const got = await replies.take(2);
  assert.equal(got[0]?.error?.code, ErrorCodes.ParseError);
  assert.equal(got[1]?.id, 1);
  server.connection.dispose();
});

const invalid: [string, string, string | number | null, RegExp][] = [
  ['an array holding a number', '[1]', null, /batches \(JSON arrays\) are not supported/],
  ['a batch of requests', `[${request(1)},${request(2)}]`, null, /batches \(JSON arrays\) are not supported/],
  ['a number', '5', null, /must be a JSON object\. Got the number 5/],
  ['a string', '"hi"', null, /must be a JSON object\. Got the string "hi"/],
  ['null', 'null', null, /must be a JSON object\. Got null/],
  ['jsonrpc 1.0', '{"jsonrpc":"1.0"}', null, /"jsonrpc" must be "2.0"\. Got the string "1.0"/],
  ['jsonrpc 1.0 with an id', '{"jsonrpc":"1.0","id":7,"method":"echo"}', 7, /"jsonrpc" must be "2.0"/],
  ['no jsonrpc member', '{"id":"a","method":"echo"}', 'a', /Got no "jsonrpc" member/],
  ['a method that is not a string', '{"jsonrpc":"2.0","id":3,"method":5}', 3, /"method" must be a string\. Got the number 5/],
  ['an id that is an object', '{"jsonrpc":"2.0","id":{},"method":"echo"}', null, /"id" must be a string, a number or null/],
  ['a request with id null', '{"jsonrpc":"2.0","id":null,"method":"echo"}', null, /request "id" must be a string or a number/],
  ['params that are a string', '{"jsonrpc":"2.0","id":4,"method":"echo","params":"x"}', 4, /"params" must be an object or an array/],
  ['neither method nor result', '{"jsonrpc":"2.0","id":5}', 5, /needs a "method".*or a "result" or "error"/],
  ['a response with both result and error', '{"jsonrpc":"2.0","id":6,"result":1,"error":{"code":1,"message":"m"}}', null, /not both/],
  ['an error without a code', '{"jsonrpc":"2.0","id":6,"error":{"message":"m"}}', null, /"error.code" must be an integer/],
];

for (const [what, line, id, message] of invalid) {
  test(`${what} is answered with -32600 (id ${JSON.stringify(id)}) and reading goes on`, bounded, async () => {
    const { toServer, replies, server } = memoryPeer('ndjson');
    toServer.write(ndjson(line, request(100)));
    const got = await replies.take(2);
    const error = got.find((r) => r.error !== undefined);
    assert.equal(error?.error?.code, ErrorCodes.InvalidRequest);
    assert.equal(error?.id, id);
    assert.match(error?.error?.message ?? '', message);
    assert.equal(got.find((r) => r.id === 100)?.result !== undefined, true);
    assert.deepEqual(server.handled, [{ n: 100 }], 'only the well-formed request reached the handler');
    server.connection.dispose();
  });
}

test('only well-formed messages reach the reader callback', bounded, async () => {
  const input = new PassThrough();
  const t = createFramedTransport(input, new PassThrough(), { maxMessageBytes: 1000 });
  const seen: unknown[] = [];
  t.reader.listen((m) => seen.push(m));
  input.write(ndjson('nope', '[1]', '5', '{"jsonrpc":"1.0"}', request(1), '{"jsonrpc":"2.0","method":"note"}'));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(seen, [JSON.parse(request(1)), { jsonrpc: '2.0', method: 'note' }]);
  t.close();
});

test('"params": null, as Go encodes a nil field, is delivered as no params', bounded, async () => {
  const input = new PassThrough();
  const t = createFramedTransport(input, new PassThrough(), { maxMessageBytes: 1000 });
  const seen: unknown[] = [];
  t.reader.listen((m) => seen.push(m));
  input.write(ndjson('{"jsonrpc":"2.0","id":1,"method":"echo","params":null}'));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(seen, [{ jsonrpc: '2.0', id: 1, method: 'echo' }]);
  t.close();
});

test('an NDJSON line over the limit is answered with -32040 before its newline, then the connection closes', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson', { maxMessageBytes: 1024 });
  toServer.write('{"jsonrpc":"2.0","id":1,"method":"echo","params":"' + 'x'.repeat(2000)); // no newline yet
  const [reply] = await replies.take(1);
  assert.deepEqual(reply, {
    jsonrpc: '2.0',
    id: null,
    error: { code: ErrorCodes.MessageTooLarge, message: reply?.error?.message },
  });
  assert.match(reply?.error?.message ?? '', /a line must be at most 1024 bytes\. Got \d+ bytes and no newline yet/);
  await replies.ended;
  await server.closed;
  assert.deepEqual(server.handled, []);
});

test('a complete NDJSON line over the limit is answered with -32040', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('ndjson', { maxMessageBytes: 100 });
  toServer.write(ndjson(request(1, 'y'.repeat(200))));
  const [reply] = await replies.take(1);
  assert.equal(reply?.error?.code, ErrorCodes.MessageTooLarge);
  await replies.ended;
  await server.closed;
});

const fatalLsp: [string, string, RegExp][] = [
  ['a Content-Length above the limit', 'Content-Length: 5000\r\n\r\n{', /Content-Length must be at most 1024\. Got 5000/],
  ['a Content-Length that is not a number', 'Content-Length: abc\r\n\r\n{}', /Content-Length value must be a non-negative integer\. Got "abc"/],
  ['a header block without Content-Length', 'Content-Type: x\r\n\r\n{}', /Content-Length is required/],
  ['a header line without a colon', 'Content-Length: 2\r\nbogus\r\n\r\n{}', /a header line must be "Name: value"\. Got "bogus"/],
  ['a header block over 8 KiB', `Content-Length: 2\r\nX-Pad: ${'p'.repeat(9000)}`, /header block must end .* within 8192 bytes/],
];

for (const [what, bytes, message] of fatalLsp) {
  test(`${what} is answered with -32040, then the connection closes`, bounded, async () => {
    const { toServer, replies, server } = memoryPeer('lsp', { maxMessageBytes: 1024 });
    toServer.write(bytes);
    const [reply] = await replies.take(1);
    assert.equal(reply?.id, null);
    assert.equal(reply?.error?.code, ErrorCodes.MessageTooLarge);
    assert.match(reply?.error?.message ?? '', message);
    assert.doesNotMatch(reply?.error?.message ?? '', /\n\s+at |\/work\//, 'no stack, no absolute path');
    await replies.ended;
    await server.closed;
    assert.deepEqual(server.protocolErrors.map((e) => e.code), [ErrorCodes.MessageTooLarge]);
  });
}

test('nothing sent after a -32040 is read or answered', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('lsp', { maxMessageBytes: 1024 });
  toServer.write('Content-Length: x\r\n\r\n' + lsp(request(1)));
  toServer.write(lsp(request(2)));
  await replies.ended;
  assert.equal(replies.frames.length, 1);
  assert.deepEqual(server.handled, []);
});
