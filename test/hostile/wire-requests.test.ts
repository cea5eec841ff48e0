// Requests a client can get wrong or take back: $/cancelRequest (as LSP), duplicate ids in one
// write, params nested too deep.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { MAX_PARAMS_DEPTH } from '../../src/server/nesting.js';
import type { Framing } from '../helpers/wire.js';
import { LIMIT, wireServer } from './wire-server.js';

const entry = (text: string) => ({ ts: '2024-01-01T00:00:00Z', role: 'user', text });
const req = (id: number | string, method: string, params: unknown) => JSON.stringify({ jsonrpc: '2.0', id, method, params });
const cancel = (id: number | string) => JSON.stringify({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id } });
const transcriptLines = (dir: string, name: string): string[] =>
  readFileSync(path.join(dir, 'transcripts', `${name}.jsonl`), 'utf8').split('\n').filter(Boolean);

for (const framing of ['ndjson', 'lsp'] as Framing[]) {
  test(`a read cancelled before it is answered gets -32800 (${framing})`, LIMIT, async (t) => {
    const w = await wireServer(t);
    const c = await w.connect(framing);
    await c.call('session/add', { session: { name: 'a' } });
    // One write: the cancel is read before the read is dispatched, whatever the timing.
    c.writeBytes(framed(framing, req(10, 'transcript/read', { name: 'a' })) + framed(framing, cancel(10)));
    const reply = await c.response(10);
    assert.equal(reply.error?.code, -32800, JSON.stringify(reply));
    assert.match(reply.error?.message ?? '', /cancel/);
    assert.deepEqual((await c.call('transcript/read', { name: 'a' }) as { entries: unknown[] }).entries, [], 'the connection goes on');
  });

  test(`a write cancelled after it was sent is applied and answered with its result (${framing})`, LIMIT, async (t) => {
    const w = await wireServer(t);
    const c = await w.connect(framing);
    await c.call('session/add', { session: { name: 'a' } });
    c.writeBytes(framed(framing, req(10, 'transcript/append', { name: 'a', entry: entry('kept') })) + framed(framing, cancel(10)));
    const reply = await c.response(10);
    assert.deepEqual(reply.result, { seq: 0 });
    assert.equal(transcriptLines(w.dir, 'a').length, 1);
  });

  test(`two requests with one id in one write: the first runs, the second gets -32600 (${framing})`, LIMIT, async (t) => {
    const w = await wireServer(t);
    const c = await w.connect(framing);
    await c.call('session/add', { session: { name: 'a' } });
    const seen: unknown[] = [];
    c.writeBytes(
      Buffer.concat([
        Buffer.from(framed(framing, req(7, 'transcript/append', { name: 'a', entry: entry('first') }))),
        Buffer.from(framed(framing, req(7, 'transcript/append', { name: 'a', entry: entry('second') }))),
      ]),
    );
    seen.push(await c.response(7), await c.response(7));
    const error = seen.find((m) => (m as { error?: unknown }).error !== undefined) as { error: { code: number; message: string } };
    const result = seen.find((m) => (m as { result?: unknown }).result !== undefined) as { result: unknown };
    assert.equal(error?.error.code, -32600, JSON.stringify(seen));
    assert.match(error.error.message, /already used/);
    assert.deepEqual(result?.result, { seq: 0 });
    assert.deepEqual(transcriptLines(w.dir, 'a').map((l) => (JSON.parse(l) as { text: string }).text), ['first']);
    // Once answered, the id is free again.
    assert.deepEqual((await c.response(sendWithId(c, 7, 'transcript/last', { name: 'a' }))).result, { ts: '2024-01-01T00:00:00Z' });
  });

  test(`ids 7 and "7" in one write are two requests: both run and each is answered with its own id (${framing})`, LIMIT, async (t) => {
    const w = await wireServer(t);
    const c = await w.connect(framing);
    await c.call('session/add', { session: { name: 'a' } });
    c.writeBytes(
      framed(framing, req(7, 'transcript/append', { name: 'a', entry: entry('number') })) +
        framed(framing, req('7', 'transcript/append', { name: 'a', entry: entry('string') })),
    );
    const [byNumber, byString] = [await c.response(7), await c.response('7')];
    assert.deepEqual([byNumber.result, byString.result], [{ seq: 0 }, { seq: 1 }], JSON.stringify([byNumber, byString]));
    assert.deepEqual(transcriptLines(w.dir, 'a').map((l) => (JSON.parse(l) as { text: string }).text), ['number', 'string']);
  });

  test(`a cancel names an id by its type: cancelling "10" leaves the read with id 10 alone (${framing})`, LIMIT, async (t) => {
    const w = await wireServer(t);
    const c = await w.connect(framing);
    await c.call('session/add', { session: { name: 'a' } });
    c.writeBytes(framed(framing, req(10, 'transcript/read', { name: 'a' })) + framed(framing, req('10', 'transcript/read', { name: 'a' })) + framed(framing, cancel('10')));
    const [byNumber, byString] = [await c.response(10), await c.response('10')];
    assert.deepEqual(byNumber.result, { entries: [], firstSeq: 0 }, JSON.stringify(byNumber));
    assert.equal(byString.error?.code, -32800, JSON.stringify(byString));
  });
}

function framed(framing: Framing, body: string): string {
  return framing === 'ndjson' ? `${body}\n` : `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

function sendWithId(c: { sendBody(b: string): void }, id: number, method: string, params: unknown): number {
  c.sendBody(req(id, method, params));
  return id;
}

test('a session/add with a field nested 100 000 deep gets -32602 naming the field, and writes nothing', LIMIT, async (t) => {
  const w = await wireServer(t, { maxMessageBytes: 4 * 1024 * 1024 });
  const c = await w.connect('ndjson');
  const depth = 100_000;
  c.sendBody(`{"jsonrpc":"2.0","id":1,"method":"session/add","params":{"session":{"name":"a","x":${'['.repeat(depth)}${']'.repeat(depth)}}}}`);
  const reply = await c.response(1);
  assert.equal(reply.error?.code, -32602, JSON.stringify(reply).slice(0, 300));
  assert.match(reply.error?.message ?? '', new RegExp(`at most ${MAX_PARAMS_DEPTH} levels.*session\\.x`));
  assert.deepEqual(await c.call('session/list', {}), { sessions: [] });
});

test(`params nested exactly ${MAX_PARAMS_DEPTH} deep pass the wire's check (the method decides)`, LIMIT, async (t) => {
  const w = await wireServer(t);
  const c = await w.connect('ndjson');
  // params (1) > session (2) > x (3) > arrays down to MAX_PARAMS_DEPTH in all.
  const arrays = MAX_PARAMS_DEPTH - 2;
  for (const [id, n] of [[1, arrays], [2, arrays + 1]] as const) {
    c.sendBody(`{"jsonrpc":"2.0","id":${id},"method":"session/add","params":{"session":{"name":"a${id}","x":${'['.repeat(n)}${']'.repeat(n)}}}}`);
  }
  const [atLimit, past] = [await c.response(1), await c.response(2)];
  // The store has its own, stricter limit for state.json; only the wire's message is asserted here.
  assert.doesNotMatch(atLimit.error?.message ?? '', /params may nest/, JSON.stringify(atLimit.error));
  assert.match(past.error?.message ?? '', /params may nest at most/);
});

test('an error reply quotes an unknown method (80 characters), key or session row field (200) in part, never in full', LIMIT, async (t) => {
  const w = await wireServer(t, { maxMessageBytes: 4 * 1024 * 1024 });
  const c = await w.connect('ndjson');
  await c.call('session/add', { session: { name: 'a' } });
  const long = 'k'.repeat(1024 * 1024);
  const cases: [string, unknown][] = [
    [long, {}],
    ['transcript/append', { name: 'a', entry: entry('x'), [long]: 1 }],
    ['session/list', { [long]: 1, [`${long}2`]: 2 }],
    ['session/add', { session: { name: 'b', [long]: JSON.parse('['.repeat(MAX_PARAMS_DEPTH) + ']'.repeat(MAX_PARAMS_DEPTH)) as unknown } }],
  ];
  for (const [method, params] of cases) {
    const reply = await c.response(sendWithId(c, 100 + cases.findIndex(([m, p]) => m === method && p === params), method, params));
    assert.ok(reply.error, `an error for ${method.slice(0, 40)}`);
    const text = JSON.stringify(reply);
    assert.ok(text.length < 8 * 1024, `reply of ${text.length} characters: ${text.slice(0, 400)}`);
    // 200 characters of an echoed key; a method name that long is answered by the transport, quoting 80.
    assert.match(text, method === long ? /"code":-32601.*k{80}…/ : /k{200}…/, `the key is recognisable: ${text.slice(0, 400)}`);
  }
  assert.deepEqual(await c.call('session/list', {}), { sessions: [(await c.call('session/find', { name: 'a' }) as { session: unknown }).session] });
});
