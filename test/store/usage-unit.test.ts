// The usage sums' arithmetic and their side-file form, unit by unit: what the budget gate reads
// after compactions and restarts rests on them (usage-sums.test.ts checks the same end to end).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TranscriptEntry } from '../../src/protocol/model.js';
import type { UsageSum } from '../../src/store/usage.js';
import { addEntry, addInteger, concatUsage, sumFromJson, sumToJson, toUsage, zeroSum } from '../../src/store/usage.js';

const MAX = Number.MAX_SAFE_INTEGER;
const entry = (extra: Partial<TranscriptEntry> = {}): TranscriptEntry => ({ ts: 't', role: 'assistant', text: '', ...extra }) as TranscriptEntry;

test('addInteger is exact: a number while the sum is safe, a bigint past 2^53-1, a number again when back in range', () => {
  assert.equal(addInteger(2, 3), 5);
  assert.equal(addInteger(7, undefined), 7);
  assert.equal(addInteger(MAX, 0), MAX);
  assert.equal(addInteger(MAX, 1), BigInt(MAX) + 1n);
  assert.equal(addInteger(-MAX, -1), -BigInt(MAX) - 1n);
  assert.equal(addInteger(BigInt(MAX) + 1n, -1), MAX);
  assert.equal(addInteger(-BigInt(MAX) - 1n, 1), -MAX);
  assert.equal(addInteger(2n ** 63n - 1n, 2n ** 63n - 1n), 2n ** 64n - 2n);
});

test('addEntry counts, sums every counter, and keeps the first and last ts', () => {
  const u = zeroSum();
  addEntry(u, entry({ ts: 'a', cost: 0.5, tokens_in: 1, tokens_out: 2, cache_read: 3, cache_create: 4, dur_ms: 5 }));
  addEntry(u, entry({ ts: 'b' }));
  addEntry(u, entry({ ts: 'c', cost: 0.25, tokens_in: 10, tokens_out: 20, cache_read: 30, cache_create: 40, dur_ms: 50 }));
  assert.deepEqual(u, { entries: 3, cost: 0.75, tokens_in: 11, tokens_out: 22, cache_read: 33, cache_create: 44, dur_ms: 55, firstTs: 'a', lastTs: 'c' });
});

const sum = (n: number, firstTs: string, lastTs: string): UsageSum => ({
  entries: n, cost: n / 4, tokens_in: n, tokens_out: 2 * n, cache_read: 3 * n, cache_create: 4 * n, dur_ms: 5 * n, firstTs, lastTs,
});

test('concatUsage adds every counter (cache_create too), keeps the first ts of the first and the last of the second', () => {
  assert.deepEqual(concatUsage(sum(1, 'a', 'b'), sum(2, 'c', 'd')), {
    entries: 3, cost: 0.75, tokens_in: 3, tokens_out: 6, cache_read: 9, cache_create: 12, dur_ms: 15, firstTs: 'a', lastTs: 'd',
  });
  assert.deepEqual(concatUsage(zeroSum(), sum(2, 'c', 'd')), sum(2, 'c', 'd'));
  assert.deepEqual(concatUsage(sum(2, 'c', 'd'), zeroSum()), sum(2, 'c', 'd'));
  const big = { ...sum(1, 'a', 'b'), cache_create: MAX };
  assert.equal(concatUsage(big, big).cache_create, 2n * BigInt(MAX));
  // A copy, never the argument itself: a later addEntry on the result must not change a stored sum.
  const b = sum(2, 'c', 'd');
  assert.notEqual(concatUsage(zeroSum(), b), b);
  assert.notEqual(concatUsage(b, zeroSum()), b);
});

test('toUsage answers a cost past float64 as ±Number.MAX_VALUE (JSON has no Infinity), a finite one as it is', () => {
  assert.equal(toUsage({ ...zeroSum(), cost: Infinity }).cost, Number.MAX_VALUE);
  assert.equal(toUsage({ ...zeroSum(), cost: -Infinity }).cost, -Number.MAX_VALUE);
  assert.equal(toUsage({ ...zeroSum(), cost: 0.1 }).cost, 0.1);
});

test('a sum survives its side-file form exactly: bigints as decimal strings, ±Infinity as strings', () => {
  const u: UsageSum = {
    entries: 4, cost: 0.30000000000000004, tokens_in: BigInt(MAX) + 2n, tokens_out: -(2n ** 63n), cache_read: 7,
    cache_create: 2n ** 64n, dur_ms: 0, firstTs: 'f', lastTs: 'l',
  };
  const json = JSON.parse(JSON.stringify(sumToJson(u))) as Record<string, unknown>;
  assert.equal(json.tokens_in, (BigInt(MAX) + 2n).toString());
  assert.equal(json.cache_create, (2n ** 64n).toString());
  assert.equal(json.cache_read, 7);
  assert.deepEqual(sumFromJson(json), u);
  for (const cost of [Infinity, -Infinity]) {
    const j = JSON.parse(JSON.stringify(sumToJson({ ...zeroSum(), cost }))) as Record<string, unknown>;
    assert.equal(j.cost, String(cost));
    assert.equal(sumFromJson(j)?.cost, cost);
  }
  // A counter stored as a string within the safe range comes back as a number.
  assert.equal(sumFromJson({ ...json, cache_read: '12' })?.cache_read, 12);
  assert.equal(sumFromJson({ ...json, cache_read: '-12' })?.cache_read, -12);
});

test('an earlier format\'s cost in nano-units (costNanos) is read as a cost', () => {
  const old = { entries: 1, costNanos: '1500000000', firstTs: 'a', lastTs: 'b', tokens_in: 0, tokens_out: 0, cache_read: 0, cache_create: 0, dur_ms: 0 };
  assert.equal(sumFromJson(old)?.cost, 1.5);
  assert.equal(sumFromJson({ ...old, costNanos: '-2000000000' })?.cost, -2);
  assert.equal(sumFromJson({ ...old, costNanos: '1.5' }), undefined);
  assert.equal(sumFromJson({ ...old, costNanos: 'x1' }), undefined);
  assert.equal(sumFromJson({ ...old, costNanos: '1x' }), undefined);
  assert.equal(sumFromJson({ ...old, costNanos: 15 }), undefined);
});

test('anything that is not a stored sum reads as undefined, never as a wrong sum', () => {
  const good = sumToJson(sum(2, 'a', 'b'));
  assert.deepEqual(sumFromJson(good), sum(2, 'a', 'b'));
  const bad: unknown[] = [
    null, undefined, 5, 'x', [],
    { ...good, entries: '2' }, { ...good, entries: 1.5 }, { ...good, entries: 2 ** 53 }, { ...good, entries: undefined },
    { ...good, firstTs: 1 }, { ...good, lastTs: null }, { ...good, firstTs: undefined },
    { ...good, cost: 'NaN' }, { ...good, cost: '1' }, { ...good, cost: NaN }, { ...good, cost: undefined }, { ...good, cost: Infinity },
    { ...good, tokens_in: 1.5 }, { ...good, tokens_out: '1.5' }, { ...good, cache_read: ' 1' }, { ...good, cache_create: '1 ' },
    { ...good, dur_ms: undefined }, { ...good, cache_read: [12] }, { ...good, tokens_in: ['-3'] }, { ...good, cache_create: 2 ** 53 }, { ...good, tokens_in: '--1' }, { ...good, tokens_in: '' },
  ];
  for (const v of bad) assert.equal(sumFromJson(v), undefined, JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? String(x) : x)));
});
