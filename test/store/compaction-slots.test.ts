// The bound on compactions running at once: no more than the slots start, the
// others start in call order as slots free, a run that fails frees its slot, and the transcripts
// of a store that reach the trigger together wait for them.
import assert from 'node:assert/strict';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { compactionSlots, MAX_CONCURRENT_COMPACTIONS, Slots } from '../../src/store/compaction-slots.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { encodeTranscriptLine } from '../../src/store/go-json.js';
import { COMPACT_KEEP_BYTES, COMPACT_TRIGGER_BYTES } from '../../src/store/transcript-compact.js';
import { newSession, openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

/** A run that records its start and ends when `finish` is called. */
function held(started: number[], i: number): { run: () => Promise<number>; finish: (fail?: boolean) => void } {
  let finish: (fail?: boolean) => void = () => undefined;
  const done = new Promise<void>((resolve, reject) => (finish = (fail) => (fail ? reject(new Error(`run ${i} failed`)) : resolve())));
  return {
    run: async () => {
      started.push(i);
      await done;
      return i;
    },
    finish,
  };
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

test('no more runs than slots start; the others start in call order as slots free', async () => {
  const slots = new Slots(2);
  const started: number[] = [];
  const runs = Array.from({ length: 5 }, (_, i) => held(started, i));
  const results = runs.map((r) => slots.run(r.run));
  await turn();
  assert.deepEqual(started, [0, 1]);
  assert.equal(slots.running, 2);
  runs[1]?.finish();
  await turn();
  assert.deepEqual(started, [0, 1, 2]);
  runs[0]?.finish();
  runs[2]?.finish();
  await turn();
  assert.deepEqual(started, [0, 1, 2, 3, 4]);
  assert.equal(slots.running, 2);
  runs[3]?.finish();
  runs[4]?.finish();
  assert.deepEqual(await Promise.all(results), [0, 1, 2, 3, 4]);
  assert.equal(slots.running, 0);
});

test('a run that fails rejects its caller and frees its slot for the next', async () => {
  const slots = new Slots(1);
  const started: number[] = [];
  const a = held(started, 0);
  const b = held(started, 1);
  const first = slots.run(a.run);
  const second = slots.run(b.run);
  await turn();
  assert.deepEqual(started, [0]);
  a.finish(true);
  await assert.rejects(first, /run 0 failed/);
  await turn();
  assert.deepEqual(started, [0, 1]);
  b.finish();
  assert.equal(await second, 1);
  assert.equal(slots.running, 0);
});

test('transcripts that reach the trigger together compact at most MAX_CONCURRENT_COMPACTIONS at once, and all of them compact', async (t) => {
  const names = Array.from({ length: MAX_CONCURRENT_COMPACTIONS + 2 }, (_, i) => `s${i}`);
  let inProgress = 0;
  let most = 0;
  // From the temp file's creation to its rename over the transcript: one compaction's write.
  const io = withIo({
    open: (file, flags, mode) => {
      if (file.endsWith('.compact')) most = Math.max(most, ++inProgress);
      return nodeIo.open(file, flags, mode);
    },
    rename: async (from, to) => {
      await nodeIo.rename(from, to);
      if (from.endsWith('.compact')) inProgress--;
    },
  });
  const dir = tempDir();
  const setup = await openIn(dir);
  for (const name of names) await setup.addSession(newSession(name));
  await setup.close();
  // Each transcript a byte under the trigger, in lines of 64 KiB (few lines: a quick scan).
  const line = (ts: string, bytes: number): string => {
    const overhead = encodeTranscriptLine({ ts, role: 'user', text: '' }).length;
    return encodeTranscriptLine({ ts, role: 'user', text: 'x'.repeat(bytes - overhead) });
  };
  const body = Array.from({ length: 63 }, (_, i) => line(`t${i}`, 64 * 1024)).join('') + line('last', COMPACT_TRIGGER_BYTES - 63 * 64 * 1024);
  mkdirSync(path.join(dir, 'transcripts'), { recursive: true });
  for (const name of names) writeFileSync(path.join(dir, `transcripts/${name}.jsonl`), body);
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  // One more entry each, appended together: every transcript passes the trigger and compacts.
  await Promise.all(names.map((name) => store.appendTranscript(name, { ts: 'new', role: 'user', text: 'x' })));
  assert.ok(most >= 1 && most <= MAX_CONCURRENT_COMPACTIONS, `${most} compactions ran at once`);
  assert.equal(compactionSlots.running, 0);
  for (const name of names) {
    const size = statSync(path.join(dir, `transcripts/${name}.jsonl`)).size;
    assert.ok(size <= COMPACT_KEEP_BYTES, `${name} compacted to ${size} bytes`);
    assert.equal((await store.readTranscript(name, 0)).at(-1)?.ts, 'new', name);
  }
});
