// Usage sums hold every value Go can write: costs anywhere in float64 (the smallest subnormal,
// 1e308, a sum past float64) summed as Go's float64 addition in append order, counters anywhere
// in int64 summed exactly (past 2^63 too), the same after a clean stop (summary) and after a
// crash (the file scanned again).
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { TranscriptEntry } from '../../src/protocol/model.js';
import { newSession, openIn, reopen } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const e = (extra: Partial<TranscriptEntry>): TranscriptEntry => ({ ts: '2026-07-26T00:00:00Z', role: 'assistant', text: 'x', ...extra });

const cases: { what: string; entries: TranscriptEntry[]; want: Record<string, unknown> }[] = [
  { what: 'the smallest subnormal twice', entries: [e({ cost: 5e-324 }), e({ cost: 5e-324 })], want: { cost: 1e-323 } },
  { what: 'costs in append order (0.1 + 0.2 + 0.3)', entries: [e({ cost: 0.1 }), e({ cost: 0.2 }), e({ cost: 0.3 })], want: { cost: 0.1 + 0.2 + 0.3 } },
  { what: '1e308 twice (past float64: answered as the largest float64)', entries: [e({ cost: 1e308 }), e({ cost: 1e308 })], want: { cost: Number.MAX_VALUE } },
  { what: '-1e308 twice', entries: [e({ cost: -1e308 }), e({ cost: -1e308 })], want: { cost: -Number.MAX_VALUE } },
  {
    what: 'int64 extremes',
    entries: [e({ tokens_in: 2n ** 63n - 1n, tokens_out: -(2n ** 63n), dur_ms: 9007199254740991 }), e({ tokens_in: 2n ** 63n - 1n, tokens_out: -1, dur_ms: 2 })],
    want: { tokens_in: 2n ** 64n - 2n, tokens_out: -(2n ** 63n) - 1n, dur_ms: 9007199254740993n },
  },
  { what: 'a sum that comes back under 2^53', entries: [e({ cache_read: 2n ** 60n }), e({ cache_read: -(2n ** 60n) + 5n })], want: { cache_read: 5 } },
];

for (const { what, entries, want } of cases) {
  test(`usage of ${what}: exact, after a clean stop and after the summary is lost`, async (t) => {
    const dir = tempDir();
    let store = await openIn(dir);
    t.after(() => store.close());
    await store.addSession(newSession('a'));
    for (const x of entries) await store.appendTranscript('a', x);
    const check = async (when: string): Promise<void> => {
      const u = await store.transcriptUsage('a') as unknown as Record<string, unknown>;
      for (const [k, v] of Object.entries(want)) assert.equal(u[k], v, `${when}: ${k}`);
      assert.equal(u.entries, entries.length, when);
    };
    await check('live');
    store = await reopen(store);
    await check('after a clean stop');
    await store.close();
    assert.ok(existsSync(path.join(dir, '.herrscher-state')), 'the side files were where this test removes them');
    rmSync(path.join(dir, '.herrscher-state'), { recursive: true });
    store = await openIn(dir);
    await check('after the side files are lost');
  });
}
