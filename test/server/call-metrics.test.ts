// What `status` counts of the calls answered (src/server/call-metrics.ts), fed directly and
// through the chain's entry (`answer`): calls and errors per method, sorted by name, an unknown
// method under one key, and the write latency percentiles (nearest rank, over the latest
// LATENCY_SAMPLES writes, reads not counted). Latencies are given, never measured here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { CancellationToken, ResponseError } from 'vscode-jsonrpc/node';
import { CallMetrics, LATENCY_SAMPLES, UNKNOWN_METHOD } from '../../src/server/call-metrics.js';
import { answer } from '../../src/server/handler.js';

test('calls and errors per method, in name order, each a copy', () => {
  const m = new CallMetrics();
  m.answered('session/list', 1, false, false);
  m.answered('a/first', 1, true, false);
  m.answered('session/list', 1, true, false);
  m.answered('session/add', 1, false, true);
  m.answered('session/list', 1, false, false);
  const snap = m.snapshot();
  assert.deepEqual(Object.keys(snap.calls), ['a/first', 'session/add', 'session/list']);
  assert.deepEqual(snap.calls, {
    'a/first': { calls: 1, errors: 1 },
    'session/add': { calls: 1, errors: 0 },
    'session/list': { calls: 3, errors: 1 },
  });
  snap.calls['session/list']!.calls = 99;
  assert.equal(m.snapshot().calls['session/list']?.calls, 3, 'a snapshot is not the live count');
});

test('the name order holds whatever order the methods were first called in', () => {
  const names = ['m/e', 'm/b', 'm/h', 'm/a', 'm/g', 'm/c', 'm/j', 'm/f', 'm/d', 'm/i'];
  const sorted = [...names].sort();
  for (const order of [names, [...names].reverse(), sorted, [...sorted].reverse()]) {
    const m = new CallMetrics();
    for (const n of order) m.answered(n, 1, false, false);
    assert.deepEqual(Object.keys(m.snapshot().calls), sorted, order.join(' '));
  }
});

test('no write yet: no percentile; reads never count toward them', () => {
  const m = new CallMetrics();
  assert.deepEqual(m.snapshot().writeLatencyMs, { p50: null, p99: null, samples: 0 });
  m.answered('session/list', 5_000, false, false);
  assert.deepEqual(m.snapshot().writeLatencyMs, { p50: null, p99: null, samples: 0 });
});

test('p50 and p99 by nearest rank over the writes, in ms to the µs, whatever order they came in', () => {
  const m = new CallMetrics();
  // 100 writes of 1…100 ms, given largest first.
  for (let ms = 100; ms >= 1; ms--) m.answered('session/add', ms * 1000, false, true);
  assert.deepEqual(m.snapshot().writeLatencyMs, { p50: 50, p99: 99, samples: 100 });
  const one = new CallMetrics();
  one.answered('session/add', 1234.6, true, true);
  assert.deepEqual(one.snapshot().writeLatencyMs, { p50: 1.235, p99: 1.235, samples: 1 }, 'a failed write is timed too');
  const two = new CallMetrics();
  two.answered('session/add', 3000, false, true);
  two.answered('session/add', 1000, false, true);
  assert.deepEqual(two.snapshot().writeLatencyMs, { p50: 1, p99: 3, samples: 2 });
});

test(`only the latest ${LATENCY_SAMPLES} writes are kept`, () => {
  const m = new CallMetrics();
  for (let i = 0; i < 20; i++) m.answered('session/add', 9_000_000, false, true);
  for (let i = 0; i < LATENCY_SAMPLES; i++) m.answered('session/add', 1000, false, true);
  assert.deepEqual(m.snapshot().writeLatencyMs, { p50: 1, p99: 1, samples: LATENCY_SAMPLES });
  assert.equal(m.snapshot().calls['session/add']?.calls, LATENCY_SAMPLES + 20);
});

test('answer counts each request once: by method (an unknown one under one key), failed or not, a write timed', async () => {
  const m = new CallMetrics();
  const h = answer(pino({ level: 'silent' }), async (c) => {
    if ((c.params as { fail?: boolean }).fail) throw new ResponseError(-32602, 'no');
    return 'ok';
  }, m);
  await h('session/add', {}, CancellationToken.None);
  await assert.rejects(h('session/add', { fail: true }, CancellationToken.None));
  await h('session/list', {}, CancellationToken.None);
  await assert.rejects(h('made/up', {}, CancellationToken.None));
  await assert.rejects(h('other/made-up', {}, CancellationToken.None));
  const snap = m.snapshot();
  assert.deepEqual(snap.calls, {
    [UNKNOWN_METHOD]: { calls: 2, errors: 2 },
    'session/add': { calls: 2, errors: 1 },
    'session/list': { calls: 1, errors: 0 },
  });
  assert.equal(snap.writeLatencyMs.samples, 2, 'the two session/add, not the read');
  assert.ok((snap.writeLatencyMs.p99 ?? -1) >= 0);
});

test('answer times a write within the span the caller saw it take (never more)', async () => {
  const m = new CallMetrics();
  const h = answer(pino({ level: 'silent' }), async () => 'ok', m);
  const before = process.hrtime.bigint();
  await h('session/add', {}, CancellationToken.None);
  const spanMs = Number(process.hrtime.bigint() - before) / 1e6;
  const p99 = m.snapshot().writeLatencyMs.p99;
  assert.ok(p99 !== null && p99 >= 0 && p99 <= spanMs + 0.001, `${p99} ms within ${spanMs} ms`);
});

test('answer times a write at least as long as its handler saw itself run (never less)', async () => {
  const m = new CallMetrics();
  // The handler returns only once its own clock has seen 1 ms pass: an ordering of clock reads,
  // not a bound on how long anything takes.
  let ranMs = 0;
  const h = answer(pino({ level: 'silent' }), async () => {
    const start = process.hrtime.bigint();
    while (process.hrtime.bigint() - start < 1_000_000n);
    ranMs = Number(process.hrtime.bigint() - start) / 1e6;
    return 'ok';
  }, m);
  await h('session/add', {}, CancellationToken.None);
  const p99 = m.snapshot().writeLatencyMs.p99;
  assert.ok(p99 !== null && p99 >= ranMs - 0.001, `${p99} ms at least the handler's ${ranMs} ms`);
});
