// The JSON-RPC shape check on its own: what is delivered, what is answered, and the leniency
// Go's encoding/json needs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { FramingError } from '../../src/transport/framing-error.js';
import { checkFrame, checkMessage } from '../../src/transport/message-check.js';
import { bounded } from './frames.js';

test('requests, notifications and responses pass unchanged', bounded, () => {
  const messages = [
    { jsonrpc: '2.0', id: 1, method: 'session/list', params: {} },
    { jsonrpc: '2.0', id: 'a', method: 'x', params: [1, 2] },
    { jsonrpc: '2.0', method: 'exit' },
    { jsonrpc: '2.0', id: 1, result: null },
    { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } },
  ];
  for (const m of messages) assert.deepEqual(checkMessage(structuredClone(m)), m);
});

test('a Go-style response with "error": null is a success, and "result": null beside an error is dropped', bounded, () => {
  assert.deepEqual(checkMessage({ jsonrpc: '2.0', id: 1, result: { ok: true }, error: null }), { jsonrpc: '2.0', id: 1, result: { ok: true } });
  assert.deepEqual(checkMessage({ jsonrpc: '2.0', id: 2, result: null, error: { code: 1, message: 'm' } }), {
    jsonrpc: '2.0',
    id: 2,
    error: { code: 1, message: 'm' },
  });
});

test('an id of 1e400, which JSON.parse reads as Infinity, is refused', bounded, () => {
  const got = checkFrame(Buffer.from('{"jsonrpc":"2.0","id":1e400,"method":"x"}'));
  assert.ok(got instanceof FramingError);
  assert.equal(got.code, ErrorCodes.InvalidRequest);
  assert.match(got.message, /"id" must be a string, a number or null\. Got the number Infinity/);
});

test('a parse error message is bounded however long the input', bounded, () => {
  const got = checkFrame(Buffer.from(`{"a":"${'x'.repeat(100_000)}`));
  assert.ok(got instanceof FramingError);
  assert.equal(got.code, ErrorCodes.ParseError);
  assert.ok(got.message.length < 300, `message is ${got.message.length} chars`);
});
