// The usage oracle the usage and seq tests share: sums computed here from the entries a test
// appended (float64 cost added in append order, as Go adds it; integers exact), independently of
// the store's own bookkeeping.
import assert from 'node:assert/strict';
import type { TranscriptEntry } from '../../src/protocol/model.js';
import type { Usage } from '../../src/store/usage.js';
import { addInteger } from '../../src/store/usage.js';

export function sumOf(entries: readonly TranscriptEntry[]): Usage {
  const u: Usage = { entries: 0, cost: 0, tokens_in: 0, tokens_out: 0, cache_read: 0, cache_create: 0, dur_ms: 0, firstTs: '', lastTs: '' };
  for (const e of entries) {
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
  return u;
}

/** Equal sums, the cost included: float64 addition in append order, as Go adds the same entries. */
export function assertUsage(got: Usage, want: Usage, what: string): void {
  assert.deepEqual(got, want, what);
}
