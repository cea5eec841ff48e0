// The TypeScript client against a broken server (test/fixtures/fake-server.mjs): whatever the
// peer sends, or does not send, every pending call ends with a clear error and `closed` is set;
// nothing hangs. A reply larger than the message limit, bytes that are not JSON-RPC, valid JSON
// that is not a message, and a reply no call waits for all end the connection. One fake server
// process serves every mode, each test on a connection of its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CallTimeoutError, ConnectionClosedError, connect } from '../../src/client/index.js';
import type { FakeMode } from '../helpers/fake-server.js';
import { fakeServerSocket } from '../helpers/fake-server.js';
import { entry } from '../helpers/feed.js';
import { startServer } from '../helpers/server.js';

const TIMEOUT = 60_000;

const broken: [FakeMode, RegExp][] = [
  ['garbage', /broke the protocol \(parse error/],
  ['huge', /broke the protocol \(message too large/],
  ['close-mid-reply', /closed the connection|broke the protocol \(parse error/],
  ['wrong-id', /no call is waiting for/],
  ['null-id', /id null, which no call is waiting for: parse error/],
  ['non-object', /broke the protocol.*JSON object/],
  ['array', /broke the protocol.*array/],
  ['list-id', /broke the protocol.*"id" must be/],
  ['deep-array', /broke the protocol/],
  ['no-result', /broke the protocol.*a "result" or "error" \(response\)\. Got neither/],
  ['null-error', /broke the protocol.*needs a "result" or an "error"/],
  ['string-error', /broke the protocol.*"error" must be an object/],
  ['bad-error-code', /broke the protocol.*"error.code" must be an integer/],
];

for (const framing of ['lsp', 'ndjson'] as const) {
  for (const [mode, says] of broken) {
    test(`${framing}, a server whose reply is ${mode}: every pending call fails with ConnectionClosedError, closed is set, later calls fail at once`, { timeout: TIMEOUT }, async (t) => {
      const socket = await fakeServerSocket(mode);
      const client = await connect({ socket, framing });
      t.after(() => client.close());
      const calls = [client.status(), client.sessionList(), client.stateGet()];
      const results = await Promise.allSettled(calls);
      for (const r of results) {
        assert.equal(r.status, 'rejected');
        assert.ok(r.reason instanceof ConnectionClosedError, `got ${String(r.reason)}`);
        assert.match((r.reason as Error).message, says);
      }
      assert.ok(client.closed instanceof Error, 'closed is set');
      await assert.rejects(client.status(), ConnectionClosedError);
    });
  }
}

test('a server that never answers: the per-call timeout rejects with CallTimeoutError; callTimeoutMs bounds every call', { timeout: TIMEOUT }, async (t) => {
  const socket = await fakeServerSocket('silent');
  const client = await connect({ socket });
  t.after(() => client.close());
  await assert.rejects(client.status(undefined, { timeoutMs: 200 }), (err: unknown) => err instanceof CallTimeoutError && /status: no reply within 200 ms/.test(err.message));
  assert.equal(client.closed, undefined, 'a timeout does not close the connection');
  const bounded = await connect({ socket, callTimeoutMs: 200 });
  t.after(() => bounded.close());
  await assert.rejects(bounded.sessionList(), CallTimeoutError);
});

test('connect({ wait, state }) to a server that accepts and never answers initialize ends within its timeoutMs', { timeout: TIMEOUT }, async () => {
  const socket = await fakeServerSocket('silent');
  await assert.rejects(connect({ socket, state: '/nowhere/state.json', wait: true, timeoutMs: 300 }), (err: Error & { code?: string }) =>
    err.code === 'ENOSERVER' && /did not say which state it serves: initialize: no reply within \d+ ms.*\(waited 300 ms\)$/.test(err.message));
});

test('the fake server in echo mode answers: the control case of the tests above', { timeout: TIMEOUT }, async (t) => {
  const socket = await fakeServerSocket('echo');
  const client = await connect({ socket });
  t.after(() => client.close());
  assert.deepEqual(await client.sessionList(), {});
  assert.equal(client.closed, undefined);
});

test('NaN or Infinity in params is refused before sending, naming where; nothing is stored and the connection stays usable', { timeout: TIMEOUT }, async (t) => {
  const server = await startServer(t);
  const client = await server.client();
  await client.sessionAdd({ session: { name: 'a' } });
  await assert.rejects(client.transcriptAppend({ name: 'a', entry: entry('x', { cost: Number.NaN }) }), (err: unknown) =>
    err instanceof TypeError && /params\.entry\.cost is NaN; JSON has no NaN or Infinity/.test(err.message));
  await assert.rejects(client.call('session/setBudget', { name: 'a', cost_cap: Number.POSITIVE_INFINITY } as never), /params\.cost_cap is Infinity/);
  assert.deepEqual((await client.transcriptRead({ name: 'a' })).entries, []);
  assert.equal((await client.transcriptAppend({ name: 'a', entry: entry('fine', { cost: 0.5 }) })).seq, 0);
});
