// Spend and token sums of a transcript: what the budget gate needs, kept up to date on append so
// it never re-reads a file, and carried across compaction so spend history is never lost.
//
// Cost is summed as Go sums it: float64 addition from 0, in append order, so a sum never differs
// from what Go's budget gate adds up over the same entries (cents and 5e-324 alike; past float64
// it is ±Infinity, as in Go). Every sum is folded onto the one before it (the compacted part's
// sum, then each later entry), never regrouped. Token and duration fields are Go ints, summed
// exactly: numbers while the sum is below 2^53, bigints past it (an entry may hold any int64, so
// two of them may not fit one).
import type { GoInteger, TranscriptEntry } from '../protocol/model.js';

/** Usage as the protocol reports it. */
export interface Usage {
  entries: number;
  cost: number;
  tokens_in: GoInteger;
  tokens_out: GoInteger;
  cache_read: GoInteger;
  cache_create: GoInteger;
  dur_ms: GoInteger;
  firstTs: string;
  lastTs: string;
}

/** Usage as the store keeps it (the same numbers; the cost may be ±Infinity). */
export type UsageSum = Usage;

export const zeroUsage = (): Usage => ({
  entries: 0, cost: 0, tokens_in: 0, tokens_out: 0, cache_read: 0, cache_create: 0, dur_ms: 0, firstTs: '', lastTs: '',
});

export const zeroSum = zeroUsage;

/** a + b exactly: a number while the sum is a safe integer, else a bigint. */
export function addInteger(a: GoInteger, b: GoInteger | undefined): GoInteger {
  if (b === undefined) return a;
  if (typeof a === 'number' && typeof b === 'number') {
    const sum = a + b;
    if (Number.isSafeInteger(sum)) return sum;
  }
  const sum = BigInt(a) + BigInt(b);
  return sum >= BigInt(Number.MIN_SAFE_INTEGER) && sum <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(sum) : sum;
}

/** Adds one entry, in append order. */
export function addEntry(u: UsageSum, e: TranscriptEntry): void {
  if (u.entries === 0) u.firstTs = e.ts;
  u.entries++;
  u.cost += e.cost ?? 0;
  u.tokens_in = addInteger(u.tokens_in, e.tokens_in);
  u.tokens_out = addInteger(u.tokens_out, e.tokens_out);
  u.cache_read = addInteger(u.cache_read, e.cache_read);
  u.cache_create = addInteger(u.cache_create, e.cache_create);
  u.dur_ms = addInteger(u.dur_ms, e.dur_ms);
  u.lastTs = e.ts;
}

/**
 * `a` then `b`: sums added, firstTs from `a` unless it is empty. The cost is a + b, which is the
 * append-order sum only when `a` holds no cost; fold entries onto a copy of `a` (addEntry) to
 * continue a sum exactly.
 */
export function concatUsage(a: UsageSum, b: UsageSum): UsageSum {
  if (a.entries === 0) return { ...b };
  if (b.entries === 0) return { ...a };
  return {
    entries: a.entries + b.entries,
    cost: a.cost + b.cost,
    tokens_in: addInteger(a.tokens_in, b.tokens_in),
    tokens_out: addInteger(a.tokens_out, b.tokens_out),
    cache_read: addInteger(a.cache_read, b.cache_read),
    cache_create: addInteger(a.cache_create, b.cache_create),
    dur_ms: addInteger(a.dur_ms, b.dur_ms),
    firstTs: a.firstTs,
    lastTs: b.lastTs,
  };
}

/**
 * The protocol's view of a sum. JSON has no Infinity: a cost past float64 (Go's sum would be
 * ±Inf) is answered as ±Number.MAX_VALUE, beyond every cap.
 */
export function toUsage(u: UsageSum): Usage {
  const cost = Number.isFinite(u.cost) ? u.cost : Math.sign(u.cost) * Number.MAX_VALUE;
  return { ...u, cost };
}

/** The integer counters of a sum. */
const COUNTERS = ['tokens_in', 'tokens_out', 'cache_read', 'cache_create', 'dur_ms'] as const;

/**
 * A sum as a side file stores it: a counter past 2^53-1 as a decimal string (JSON.stringify has
 * no bigint), a cost past float64 as "Infinity" or "-Infinity" (JSON has none).
 */
export function sumToJson(u: UsageSum): Record<string, unknown> {
  const out: Record<string, unknown> = { ...u, cost: Number.isFinite(u.cost) ? u.cost : String(u.cost) };
  for (const k of COUNTERS) if (typeof u[k] === 'bigint') out[k] = u[k].toString();
  return out;
}

/** A counter as sumToJson stores it, or undefined. */
function counterFromJson(v: unknown): GoInteger | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : undefined;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return addInteger(0, BigInt(v));
  return undefined;
}

/** A cost as sumToJson stores it, or as an earlier format did (nano-units as a decimal string). */
function costFromJson(o: Record<string, unknown>): number | undefined {
  if (typeof o.cost === 'number' && Number.isFinite(o.cost)) return o.cost;
  if (o.cost === 'Infinity' || o.cost === '-Infinity') return Number(o.cost);
  if (typeof o.costNanos === 'string' && /^-?\d+$/.test(o.costNanos)) return Number(o.costNanos) / 1e9;
  return undefined;
}

/** A stored sum back. Undefined for anything else. */
export function sumFromJson(v: unknown): UsageSum | undefined {
  const o = v as Record<string, unknown> | null;
  if (!o || typeof o !== 'object') return undefined;
  if (typeof o.entries !== 'number' || !Number.isSafeInteger(o.entries)) return undefined;
  if (typeof o.firstTs !== 'string' || typeof o.lastTs !== 'string') return undefined;
  const cost = costFromJson(o);
  if (cost === undefined) return undefined;
  const out: UsageSum = { ...zeroSum(), entries: o.entries, cost, firstTs: o.firstTs, lastTs: o.lastTs };
  for (const k of COUNTERS) {
    const n = counterFromJson(o[k]);
    if (n === undefined) return undefined;
    out[k] = n;
  }
  return out;
}
