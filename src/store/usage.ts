// Spend and token sums of a transcript: what the budget gate needs, kept up to date on append so
// it never re-reads a file, and carried across compaction so spend history is never lost.
import type { TranscriptEntry, TranscriptUsage } from '../protocol/model.js';

/** The sums as transcript/usage answers them: the contract's TranscriptUsage, not a copy. */
export type Usage = TranscriptUsage;

export const zeroUsage = (): Usage => ({
  entries: 0, cost: 0, tokens_in: 0, tokens_out: 0, cache_read: 0, cache_create: 0, dur_ms: 0, firstTs: '', lastTs: '',
});

/** Adds one entry, in append order (float sums depend on order, so it never changes). */
export function addEntry(u: Usage, e: TranscriptEntry): void {
  if (u.entries === 0) u.firstTs = e.ts;
  u.entries++;
  u.cost += e.cost ?? 0;
  u.tokens_in += e.tokens_in ?? 0;
  u.tokens_out += e.tokens_out ?? 0;
  u.cache_read += e.cache_read ?? 0;
  u.cache_create += e.cache_create ?? 0;
  u.dur_ms += e.dur_ms ?? 0;
  u.lastTs = e.ts;
}

/** `a` then `b`: sums added, firstTs from `a` unless it is empty. */
export function concatUsage(a: Usage, b: Usage): Usage {
  if (a.entries === 0) return { ...b };
  if (b.entries === 0) return { ...a };
  return {
    entries: a.entries + b.entries,
    cost: a.cost + b.cost,
    tokens_in: a.tokens_in + b.tokens_in,
    tokens_out: a.tokens_out + b.tokens_out,
    cache_read: a.cache_read + b.cache_read,
    cache_create: a.cache_create + b.cache_create,
    dur_ms: a.dur_ms + b.dur_ms,
    firstTs: a.firstTs,
    lastTs: b.lastTs,
  };
}

export function usageOf(entries: readonly TranscriptEntry[]): Usage {
  const u = zeroUsage();
  for (const e of entries) addEntry(u, e);
  return u;
}
