// Seq and usage never go back. Reproduces a reported case: after 1 000 appends (one compaction)
// the side file that numbers the compacted transcript is damaged and the server restarts; the next
// seq must still follow the last acknowledged one, and usage must not change. Each copy of what
// compaction removed is checked against the file it describes; only when every copy is gone does
// the durable high-water mark number the file, with one error naming what was lost.
//
// The 1 000 appends are what cost here, not their bytes: the reported case runs them once and
// damages its side files step by step (each step leaves the store as a restart found it); the
// crash and the float-sum tests pass Go's 4 MiB trigger once with ~100 entries of 50 KiB instead.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { TranscriptEntry } from '../../src/protocol/model.js';
import type { Store, StoreOptions } from '../../src/store/store.js';
import { COMPACT_TRIGGER_BYTES } from '../../src/store/transcript-compact.js';
import { newSession, openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 60_000;
const N = 1000;
/** ~5 KiB each: 1 000 of them pass the 4 MiB trigger once. */
const entry = (i: number, bytes = 5 * 1024): TranscriptEntry => ({ ts: `t${i}`, role: 'user', text: `${i}:`.padEnd(bytes, 'x'), cost: 0.01, tokens_in: 3 });
/** 50 KiB each, and enough of them to pass the trigger once (and not twice: it keeps 2 MiB). */
const BIG = 50 * 1024;
const BIG_N = Math.ceil((COMPACT_TRIGGER_BYTES * 1.2) / BIG);

const metaOf = (dir: string) => path.join(dir, '.herrscher-state', 'transcripts', 's.json');
const copyOf = (dir: string) => `${metaOf(dir)}.copy`;

async function appendsIn(dir: string, n: number, bytes?: number, options: StoreOptions = {}): Promise<{ store: Store; last: number }> {
  const store = await openIn(dir, options);
  await store.addSession(newSession('s'));
  let last = -1;
  for (let i = 0; i < n; i++) last = await store.appendTranscript('s', entry(i, bytes));
  assert.ok(existsSync(metaOf(dir)), 'the appends compacted the transcript at least once');
  return { store, last };
}

async function reopenedWith(dir: string): Promise<{ store: Store; errors: string[] }> {
  const errors: string[] = [];
  const store = await openIn(dir, { error: (m) => errors.push(m) });
  return { store, errors };
}

test('after 1 000 appends (one compaction): seq continues after 999 and usage stays to the last digit through each damage of the side files', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const { store, last } = await appendsIn(dir, N);
  assert.equal(last, N - 1);
  const usage = await store.transcriptUsage('s');
  // Go's float64 sum of the same costs, in append order (not 10: 0.01 has no exact float64).
  assert.equal(usage.cost, Array.from({ length: N }, (_, i) => entry(i).cost ?? 0).reduce((sum, c) => sum + c, 0));
  await store.close();

  await t.test('a missing meta is rebuilt from its copy, and a missing copy from the meta; usage unchanged', async () => {
    for (const gone of [metaOf(dir), copyOf(dir)]) {
      rmSync(gone);
      const again = await reopenedWith(dir);
      try {
        assert.deepEqual(await again.store.transcriptUsage('s'), usage);
        assert.deepEqual(again.errors, []);
        assert.ok(existsSync(gone), `${path.basename(gone)} rebuilt`);
      } finally {
        await again.store.close();
      }
    }
  });

  await t.test('the meta corrupted, a restart continues seq after 999 and keeps usage exactly; the damaged meta is rebuilt from the good copy', async () => {
    writeFileSync(metaOf(dir), '{"ino":1,"firstSeq":0'); // damaged
    const again = await reopenedWith(dir);
    try {
      assert.deepEqual(await again.store.transcriptUsage('s'), usage, 'usage unchanged, exactly');
      assert.equal(await again.store.appendTranscript('s', entry(N)), N);
      assert.ok(readFileSync(metaOf(dir), 'utf8') === readFileSync(copyOf(dir), 'utf8'), 'the damaged copy was rebuilt from the good one');
    } finally {
      await again.store.close();
    }
  });

  await t.test('with every copy gone, the next seq still follows the last acknowledged one, and one error names the file and the loss', async () => {
    rmSync(metaOf(dir));
    writeFileSync(copyOf(dir), 'garbage');
    const again = await reopenedWith(dir);
    try {
      const next = await again.store.appendTranscript('s', entry(N + 1));
      assert.ok(next > N, `next seq ${next} must be above the acknowledged ${N}`);
      const about = again.errors.filter((e) => e.includes('transcripts/s.jsonl'));
      assert.equal(about.length, 1, again.errors.join('\n'));
      assert.match(about[0] as string, /seq.*high-water mark.*usage of \d+ compacted entries is lost/);
    } finally {
      await again.store.close();
    }
  });
});

test('after a crash (no clean close) with every copy gone, the log\'s records keep the next seq above the acknowledged ones', { timeout: TIMEOUT }, async () => {
  const dir = tempDir();
  const { last } = await appendsIn(dir, BIG_N, BIG, { lock: false }); // never closed: a kill -9
  rmSync(metaOf(dir));
  rmSync(copyOf(dir));
  const again = await reopenedWith(dir);
  try {
    const next = await again.store.appendTranscript('s', entry(BIG_N));
    assert.ok(next > last, `next seq ${next} must be above the acknowledged ${last}`);
  } finally {
    await again.store.close();
  }
});

test('usage is identical before and after a restart, to the last digit (costs that do not add up exactly as floats)', { timeout: TIMEOUT }, async () => {
  const dir = tempDir();
  const store = await openIn(dir, { durability: 'write' });
  await store.addSession(newSession('s'));
  const costs = [0.1, 0.2, 0.3, 1e-7, 0.123456789, 3.3];
  for (let i = 0; i < BIG_N; i++) {
    await store.appendTranscript('s', { ...entry(i, BIG), cost: costs[i % costs.length] as number });
  }
  assert.ok(existsSync(metaOf(dir)), 'the appends compacted the transcript: usage is the compacted part plus the file');
  const before = await store.transcriptUsage('s');
  await store.close();
  const again = await openIn(dir, { durability: 'write' });
  try {
    assert.deepEqual(await again.transcriptUsage('s'), before);
  } finally {
    await again.close();
  }
});
