// The usage oracle the usage and seq tests share: sums computed here from the entries a test
// appended, independently of the store's own bookkeeping, and compared with a float tolerance.
import assert from 'node:assert/strict';
import type { TranscriptEntry } from '../../src/protocol/model.js';
import type { Usage } from '../../src/store/usage.js';

export function sumOf(entries: readonly TranscriptEntry[]): Usage {
  const u: Usage = { entries: 0, cost: 0, tokens_in: 0, tokens_out: 0, cache_read: 0, cache_create: 0, dur_ms: 0, firstTs: '', lastTs: '' };
  for (const e of entries) {
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
  return u;
}

/** Equal sums; the cost within 1e-9 (a float sum regrouped after a restart may differ in the last bits). */
export function assertUsage(got: Usage, want: Usage, what: string): void {
  assert.ok(Math.abs(got.cost - want.cost) < 1e-9, `${what}: cost ${got.cost}, expected ${want.cost}`);
  assert.deepEqual({ ...got, cost: 0 }, { ...want, cost: 0 }, what);
}
