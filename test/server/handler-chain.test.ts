// The connection's handler chain, one handler at a time: answer (lookup, error mapping), order,
// gate and cancel, each over a stub `next` that records what reached it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { CancellationToken, CancellationTokenSource, ResponseError } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { cancelHandler } from '../../src/server/cancel-handler.js';
import { gateHandler } from '../../src/server/gate-handler.js';
import type { Call, CallHandler } from '../../src/server/handler.js';
import { answer } from '../../src/server/handler.js';
import { orderHandler } from '../../src/server/order-handler.js';
import { MAX_RUNNING_READS, ReadGate } from '../../src/server/read-gate.js';
import type { LogLine } from '../helpers/server.js';

const read = (token: CancellationToken = CancellationToken.None): Call => ({ method: 'session/list', params: {}, token, write: false });
const write = (): Call => ({ method: 'session/add', params: {}, token: CancellationToken.None, write: true });

/** A `next` whose calls stay pending until released, in the order they arrived. */
function held() {
  const started: { call: Call; release: (v?: unknown) => void; fail: (e: Error) => void }[] = [];
  const next: CallHandler = (call) => new Promise((resolve, reject) => started.push({ call, release: resolve, fail: reject }));
  return { next, started };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
const codeOf = (err: unknown): number | undefined => (err instanceof ResponseError ? err.code : undefined);

test('answer: an unknown method or a notification name is -32601 and never reaches the chain', async () => {
  const reached: Call[] = [];
  const h = answer(pino({ level: 'silent' }), async (c) => {
    reached.push(c);
  });
  for (const m of ['nope', 'exit', '__proto__']) {
    await assert.rejects(h(m, {}, CancellationToken.None), (e) => codeOf(e) === ErrorCodes.MethodNotFound, m);
  }
  assert.equal(reached.length, 0);
  await h('session/add', { x: 1 }, CancellationToken.None);
  await h('session/list', {}, CancellationToken.None);
  assert.deepEqual(reached.map((c) => [c.method, c.write]), [['session/add', true], ['session/list', false]]);
});

test('answer: a ResponseError passes as is; anything else is -32603 and logged at error with the method', async () => {
  const logs: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (l: string) => void logs.push(JSON.parse(l) as LogLine) });
  const refusing = answer(log, () => Promise.reject(new ResponseError(ErrorCodes.InvalidParams, 'bad')));
  await assert.rejects(refusing('session/list', {}, CancellationToken.None), (e) => codeOf(e) === ErrorCodes.InvalidParams);
  assert.equal(logs.filter((l) => l.level >= 50).length, 0, 'an answered refusal is not an error of ours');
  const failing = answer(log, () => Promise.reject(new Error('boom')));
  await assert.rejects(failing('session/list', {}, CancellationToken.None), (e) => codeOf(e) === ErrorCodes.InternalError);
  const errors = logs.filter((l) => l.level >= 50);
  assert.equal(errors.length, 1);
  assert.equal(errors[0]?.method, 'session/list');
  assert.ok(logs.some((l) => l.msg === 'request' && typeof l.us === 'number'), 'each request is timed at debug');
});

test('order: a read waits for the writes sent before it; writes behind writes run at once', async () => {
  const { next, started } = held();
  const h = orderHandler(next);
  const w1 = h(write());
  const w2 = h(write());
  const r = h(read());
  await turn();
  assert.deepEqual(started.map((s) => s.call.write), [true, true], 'both writes run; the read waits');
  started[0]?.release();
  await turn();
  assert.equal(started.length, 2, 'the read still waits for the second write');
  started[1]?.release();
  await Promise.all([w1, w2]);
  await turn();
  assert.equal(started.length, 3, 'the read runs once the writes before it are answered');
  started[2]?.release('done');
  assert.equal(await r, 'done');
});

test('order: a write waits for the reads before it, even when one of them fails', async () => {
  const { next, started } = held();
  const h = orderHandler(next);
  const r = h(read());
  const w = h(write());
  await turn();
  assert.equal(started.length, 1);
  started[0]?.fail(new Error('read failed'));
  await assert.rejects(r);
  await turn();
  assert.equal(started.length, 2, 'the write runs after the failed read');
  started[1]?.release();
  await w;
});

test('order: a read cancelled while it waits is -32800 at once; the writes go on; two chains never wait for each other', async () => {
  const { next, started } = held();
  const h = orderHandler(next);
  const other = orderHandler(next);
  void h(write());
  const source = new CancellationTokenSource();
  const r = h(read(source.token));
  const elsewhere = other(read());
  await turn();
  assert.equal(started.length, 2, 'the other connection\'s read is not held by this one\'s write');
  source.cancel();
  await assert.rejects(r, (e) => codeOf(e) === ErrorCodes.RequestCancelled);
  started[1]?.release();
  await elsewhere;
  assert.equal(started.filter((s) => !s.call.write).length, 1, 'the cancelled read never ran');
});

test('gate: at most MAX_RUNNING_READS reads run; the next starts when one leaves; writes pass', async () => {
  const { next, started } = held();
  const h = gateHandler(new ReadGate(undefined), next);
  const reads = Array.from({ length: MAX_RUNNING_READS + 2 }, () => h(read()));
  const w = h(write());
  await turn();
  assert.equal(started.filter((s) => !s.call.write).length, MAX_RUNNING_READS);
  assert.equal(started.filter((s) => s.call.write).length, 1, 'a write is not gated');
  started.find((s) => !s.call.write)?.release();
  await turn();
  assert.equal(started.filter((s) => !s.call.write).length, MAX_RUNNING_READS + 1);
  for (const s of started) s.release();
  await turn();
  for (const s of started) s.release();
  await Promise.all([...reads, w]);
});

test('gate: a read cancelled while queued is -32800 and gives its slot back', async () => {
  const { next, started } = held();
  const gate = new ReadGate(undefined);
  const h = gateHandler(gate, next);
  const running = Array.from({ length: MAX_RUNNING_READS }, () => h(read()));
  const source = new CancellationTokenSource();
  const queued = h(read(source.token));
  const after = h(read());
  await turn();
  source.cancel();
  await assert.rejects(queued, (e) => codeOf(e) === ErrorCodes.RequestCancelled);
  started[0]?.release();
  await turn();
  assert.equal(started.length, MAX_RUNNING_READS + 1, 'the read after the cancelled one runs in the freed slot');
  for (const s of started) s.release();
  await Promise.all([...running, after]);
  // Every slot came back: a full set of reads runs at once again.
  const again = Array.from({ length: MAX_RUNNING_READS }, () => h(read()));
  await turn();
  assert.equal(started.length, 2 * MAX_RUNNING_READS + 1);
  for (const s of started) s.release();
  await Promise.all(again);
});

test('cancel: a read cancelled while it ran is -32800 instead of its result; a write is answered anyway', async () => {
  const source = new CancellationTokenSource();
  const h = cancelHandler(async (c) => {
    source.cancel();
    return c.write ? 'written' : 'read';
  });
  await assert.rejects(h(read(source.token)), (e) => codeOf(e) === ErrorCodes.RequestCancelled);
  assert.equal(await h({ ...write(), token: source.token }), 'written');
  const fresh = cancelHandler(async () => 'read');
  assert.equal(await fresh(read()), 'read');
});

test('answer: an unknown method names the nearest methods, in its message and in data.suggestions', async () => {
  const h = answer(pino({ level: 'silent' }), async () => undefined);
  const refusal = async (m: string): Promise<ResponseError<{ suggestions: string[] }>> => {
    const err = await h(m, {}, CancellationToken.None).then(
      () => assert.fail(`${m} was answered`),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ResponseError && err.code === ErrorCodes.MethodNotFound, String(err));
    return err as ResponseError<{ suggestions: string[] }>;
  };
  const typo = await refusal('sesion/add');
  assert.equal(typo.data?.suggestions[0], 'session/add');
  assert.match(typo.message, /^unknown method "sesion\/add"; did you mean "session\/add"/);
  const several = await refusal('session/lst');
  assert.ok(several.data?.suggestions.includes('session/list'));
  assert.ok((several.data?.suggestions.length ?? 0) > 1);
  assert.ok(several.message.includes(several.data?.suggestions.map((s) => JSON.stringify(s)).join(', ') ?? '-'), 'the message lists them all, comma-separated');
  assert.deepEqual((await refusal('Transcript/Read')).data?.suggestions, ['transcript/read']);
  const none = await refusal('zzzzzzzzzzzz');
  assert.deepEqual(none.data?.suggestions, []);
  assert.match(none.message, /rpc\.discover lists every method/);
  assert.deepEqual((await refusal('x'.repeat(100_000))).data?.suggestions, [], 'a long name is not compared');
});

test('answer: suggestions name requests only (never a notification), and a name is compared up to 80 characters', async () => {
  const h = answer(pino({ level: 'silent' }), async () => undefined);
  const suggested = (m: string): Promise<string[] | undefined> =>
    h(m, {}, CancellationToken.None).then(
      () => assert.fail(`${m} was answered`),
      (e: unknown) => (e as ResponseError<{ suggestions: string[] }>).data?.suggestions,
    );
  assert.deepEqual(await suggested('exitt'), [], '"exit" is a notification: one edit away, never suggested');
  const at80 = `session/${'x'.repeat(72)}`;
  assert.equal(at80.length, 80);
  assert.ok(((await suggested(at80)) ?? []).every((s) => s.startsWith('session/')) && ((await suggested(at80)) ?? []).length > 0, '80 characters: compared');
  assert.deepEqual(await suggested(`${at80}x`), [], '81 characters: not compared, though its "session/" would match');
});
