// The usage oracle the usage and seq tests share: sums computed here from the entries a test
// appended (float64 cost added in append order, as Go adds it; integers summed exactly as bigints
// and shown as a number when the total is a safe integer), independently of the store's own
// bookkeeping and of its addition (src/store/usage.ts).
import assert from 'node:assert/strict';
import type { GoInteger, TranscriptEntry } from '../../src/protocol/model.js';
import type { Usage } from '../../src/store/usage.js';

const INTEGER_FIELDS = ['tokens_in', 'tokens_out', 'cache_read', 'cache_create', 'dur_ms'] as const;

/** A total as the protocol shows it: a number while it is a safe integer, else a bigint. */
const shown = (total: bigint): GoInteger => (total >= BigInt(Number.MIN_SAFE_INTEGER) && total <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(total) : total);

export function sumOf(entries: readonly TranscriptEntry[]): Usage {
  const totals = Object.fromEntries(INTEGER_FIELDS.map((f) => [f, 0n])) as Record<(typeof INTEGER_FIELDS)[number], bigint>;
  let cost = 0;
  for (const e of entries) {
    cost += e.cost ?? 0;
    for (const f of INTEGER_FIELDS) totals[f] += BigInt(e[f] ?? 0);
  }
  return {
    entries: entries.length,
    cost,
    tokens_in: shown(totals.tokens_in),
    tokens_out: shown(totals.tokens_out),
    cache_read: shown(totals.cache_read),
    cache_create: shown(totals.cache_create),
    dur_ms: shown(totals.dur_ms),
    firstTs: entries[0]?.ts ?? '',
    lastTs: entries.at(-1)?.ts ?? '',
  };
}

/** Equal sums, the cost included: float64 addition in append order, as Go adds the same entries. */
export function assertUsage(got: Usage, want: Usage, what: string): void {
  assert.deepEqual(got, want, what);
}
