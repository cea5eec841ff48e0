// Spend and token sums of a transcript: what the budget gate needs, kept up to date on append so
// it never re-reads a file, and carried across compaction so spend history is never lost.
//
// Cost is summed exactly, in integer nano-units (each entry's cost rounded to 1e-9, the sum a
// bigint): a float sum depends on grouping, and the sums are regrouped at every restart (the
// compacted part from the meta, the rest from the file), so a float total changed its last digits
// across a restart. Token and duration fields are integers, exact as numbers up to 2^53.
import type { TranscriptEntry } from '../protocol/model.js';

/** Usage as the protocol reports it. */
export interface Usage {
  entries: number;
  cost: number;
  tokens_in: number;
  tokens_out: number;
  cache_read: number;
  cache_create: number;
  dur_ms: number;
  firstTs: string;
  lastTs: string;
}

/** Usage as the store keeps it: the cost as an exact sum of nano-units. */
export interface UsageSum extends Omit<Usage, 'cost'> {
  costNanos: bigint;
}

const NANOS = 1e9;

export const zeroUsage = (): Usage => ({
  entries: 0, cost: 0, tokens_in: 0, tokens_out: 0, cache_read: 0, cache_create: 0, dur_ms: 0, firstTs: '', lastTs: '',
});

export const zeroSum = (): UsageSum => ({
  entries: 0, costNanos: 0n, tokens_in: 0, tokens_out: 0, cache_read: 0, cache_create: 0, dur_ms: 0, firstTs: '', lastTs: '',
});

/** An entry's cost in nano-units (finite: NaN and ±Inf are refused before an entry is written). */
const nanosOf = (cost: number | undefined): bigint => (cost ? BigInt(Math.round(cost * NANOS)) : 0n);

/** Adds one entry, in append order. */
export function addEntry(u: UsageSum, e: TranscriptEntry): void {
  if (u.entries === 0) u.firstTs = e.ts;
  u.entries++;
  u.costNanos += nanosOf(e.cost);
  u.tokens_in += e.tokens_in ?? 0;
  u.tokens_out += e.tokens_out ?? 0;
  u.cache_read += e.cache_read ?? 0;
  u.cache_create += e.cache_create ?? 0;
  u.dur_ms += e.dur_ms ?? 0;
  u.lastTs = e.ts;
}

/** `a` then `b`: sums added, firstTs from `a` unless it is empty. */
export function concatUsage(a: UsageSum, b: UsageSum): UsageSum {
  if (a.entries === 0) return { ...b };
  if (b.entries === 0) return { ...a };
  return {
    entries: a.entries + b.entries,
    costNanos: a.costNanos + b.costNanos,
    tokens_in: a.tokens_in + b.tokens_in,
    tokens_out: a.tokens_out + b.tokens_out,
    cache_read: a.cache_read + b.cache_read,
    cache_create: a.cache_create + b.cache_create,
    dur_ms: a.dur_ms + b.dur_ms,
    firstTs: a.firstTs,
    lastTs: b.lastTs,
  };
}

/** The protocol's view of a sum: the cost as a number (the nearest double to the exact total). */
export function toUsage(u: UsageSum): Usage {
  const { costNanos, ...rest } = u;
  return { ...rest, cost: Number(costNanos) / NANOS };
}

/** A sum as a side file stores it: the cost as a decimal string of nano-units (exact). */
export function sumToJson(u: UsageSum): Record<string, unknown> {
  const { costNanos, ...rest } = u;
  return { ...rest, costNanos: costNanos.toString() };
}

/** A stored sum back; also reads the first format's float `cost`. Undefined for anything else. */
export function sumFromJson(v: unknown): UsageSum | undefined {
  const o = v as Record<string, unknown> | null;
  if (!o || typeof o !== 'object') return undefined;
  const nums = ['entries', 'tokens_in', 'tokens_out', 'cache_read', 'cache_create', 'dur_ms'] as const;
  if (!nums.every((k) => typeof o[k] === 'number' && Number.isFinite(o[k]))) return undefined;
  if (typeof o.firstTs !== 'string' || typeof o.lastTs !== 'string') return undefined;
  let costNanos: bigint;
  if (typeof o.costNanos === 'string' && /^-?\d+$/.test(o.costNanos)) costNanos = BigInt(o.costNanos);
  else if (typeof o.cost === 'number' && Number.isFinite(o.cost)) costNanos = BigInt(Math.round(o.cost * NANOS));
  else return undefined;
  const out = zeroSum();
  for (const k of nums) out[k] = o[k] as number;
  return { ...out, costNanos, firstTs: o.firstTs, lastTs: o.lastTs };
}
