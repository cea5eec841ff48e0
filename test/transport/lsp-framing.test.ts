// LSP base-protocol framing end to end: Content-Length frames in, a real connection in the middle.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { LspDecoder, encodeLsp, parseHeaderBlock } from '../../src/transport/lsp-framing.js';
import { FramingError } from '../../src/transport/framing-error.js';
import { bounded, lsp, memoryPeer, request, writeInPieces } from './frames.js';

test('an LSP request is answered with a Content-Length frame', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('lsp');
  toServer.write(lsp(request(1, { hello: 'world' })));
  const [reply] = await replies.take(1);
  assert.deepEqual(reply, { jsonrpc: '2.0', id: 1, result: { hello: 'world' } });
  assert.match(replies.raw, /^Content-Length: \d+\r\n\r\n\{/);
  assert.equal(server.transport.framing(), 'lsp');
  server.connection.dispose();
});

test('the reply Content-Length counts UTF-8 bytes, not characters', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('lsp');
  toServer.write(lsp(request(1, { text: 'é😀' })));
  await replies.take(1);
  const [header, body] = replies.raw.split('\r\n\r\n') as [string, string];
  assert.equal(header, `Content-Length: ${Buffer.byteLength(body)}`);
  assert.notEqual(Buffer.byteLength(body), body.length);
  server.connection.dispose();
});

test('a Content-Type header and any header-name case are accepted', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('lsp');
  const body = request(3);
  toServer.write(`content-length: ${Buffer.byteLength(body)}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n${body}`);
  const [reply] = await replies.take(1);
  assert.equal(reply?.id, 3);
  server.connection.dispose();
});

test('many LSP frames in one chunk are each answered', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('lsp');
  const count = 500;
  toServer.write(Array.from({ length: count }, (_, i) => lsp(request(i + 1))).join(''));
  const got = await replies.take(count);
  assert.deepEqual(
    got.map((r) => r.id).sort((a, b) => Number(a) - Number(b)),
    Array.from({ length: count }, (_, i) => i + 1),
  );
  server.connection.dispose();
});

test('an LSP frame split into 1-byte chunks, headers included, is answered', bounded, async () => {
  const { toServer, replies, server } = memoryPeer('lsp');
  await writeInPieces(toServer, Buffer.from(lsp(request(5, { text: 'ü😀' }))), 1);
  const [reply] = await replies.take(1);
  assert.deepEqual(reply?.result, { text: 'ü😀' });
  server.connection.dispose();
});

test('the decoder delivers frames whatever the chunk boundaries', bounded, () => {
  const frames = [lsp('{"a":"é"}'), lsp('{}'), lsp('{"long":"' + 'x'.repeat(300) + '"}')].join('');
  const bytes = Buffer.from(frames);
  for (const size of [1, 2, 3, 5, 7, 64, bytes.length]) {
    const bodies: string[] = [];
    const decoder = new LspDecoder(1000, { body: (b) => bodies.push(b.toString()), fatal: (e) => assert.fail(e.message) });
    for (let i = 0; i < bytes.length; i += size) decoder.push(bytes.subarray(i, i + size));
    assert.deepEqual(bodies, ['{"a":"é"}', '{}', '{"long":"' + 'x'.repeat(300) + '"}'], `chunk size ${size}`);
  }
});

test('encodeLsp frames a message with its UTF-8 length', bounded, () => {
  assert.equal(encodeLsp({ s: 'é' }), 'Content-Length: 10\r\n\r\n{"s":"é"}');
});

test('parseHeaderBlock states the rule and the value seen', bounded, () => {
  const cases: [string, RegExp][] = [
    ['Content-Length: abc', /Content-Length value must be a non-negative integer\. Got "abc"/],
    ['Content-Length: -1', /non-negative integer\. Got "-1"/],
    ['Content-Type: application/json', /Content-Length is required/],
    ['Content-Length 12', /a header line must be "Name: value"\. Got "Content-Length 12"/],
    ['Content-Length: 2000', /Content-Length must be at most 1000\. Got 2000/],
    ['Content-Length: 1\r\nContent-Length: 2', /Content-Length must appear once/],
  ];
  for (const [block, message] of cases) {
    const got = parseHeaderBlock(block, 1000);
    assert.ok(got instanceof FramingError, block);
    assert.equal(got.code, ErrorCodes.MessageTooLarge);
    assert.match(got.message, message);
  }
  assert.equal(parseHeaderBlock('Content-Length: 12 ', 1000), 12);
});

test('a block of just "Content-Length: <digits>" reads as the same header written any other way does', bounded, () => {
  const digits = ['0', '7', '007', '999', '1000', '1001', '0001000', '9'.repeat(30), ''];
  for (const d of digits) {
    const got = parseHeaderBlock(`Content-Length: ${d}`, 1000);
    for (const other of [`content-length: ${d}`, `Content-Length:  ${d} `, `Content-Type: x\r\nContent-Length: ${d}`]) {
      const same = parseHeaderBlock(other, 1000);
      if (typeof got === 'number') assert.equal(same, got, `${JSON.stringify(other)} against ${d}`);
      else assert.equal(same instanceof FramingError ? same.message : same, got.message, `${JSON.stringify(other)} against ${d}`);
    }
  }
  assert.equal(parseHeaderBlock('Content-Length: 1000', 1000), 1000);
  assert.ok(parseHeaderBlock('Content-Length: 1001', 1000) instanceof FramingError);
});

test('a header line ended by a bare "\\n" is refused at once, whatever the chunks (an NDJSON line taken for LSP never waits)', bounded, () => {
  const input = Buffer.from('c\n{"jsonrpc":"2.0","id":1,"method":"session/list"}\n');
  for (const size of [input.length, 1, 2, 5]) {
    const errors: FramingError[] = [];
    const decoder = new LspDecoder(1000, { body: () => assert.fail('no body'), fatal: (e) => errors.push(e) });
    for (let i = 0; i < input.length; i += size) decoder.push(input.subarray(i, i + size));
    assert.equal(errors.length, 1, `chunks of ${size}: one fatal error, before any more input`);
    assert.match((errors[0] as FramingError).message, /a header line must end with "\\r\\n"\. Got "c" and a bare "\\n"/);
  }
  // "\r\n" line ends still frame as before, across any cut.
  const good = Buffer.from(lsp('{}'));
  for (const size of [1, 2, 3]) {
    const bodies: string[] = [];
    const decoder = new LspDecoder(1000, { body: (b) => bodies.push(b.toString()), fatal: (e) => assert.fail(e.message) });
    for (let i = 0; i < good.length; i += size) decoder.push(good.subarray(i, i + size));
    assert.deepEqual(bodies, ['{}']);
  }
});
