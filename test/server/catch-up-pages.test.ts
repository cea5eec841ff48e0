// CatchUpPages (src/server/catch-up-pages.ts) alone, over a source whose reads the test answers:
// at most MAX_CATCH_UP_READS pages read at once, the bounds each read asks for, the counters
// `status` shows, a close that stops the waiting reads, and a connection's steps one after another.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TranscriptEntry } from '../../src/protocol/model.js';
import { CatchUpPages } from '../../src/server/catch-up-pages.js';
import type { FeedPage, FeedSource, NotificationSink } from '../../src/server/feed-limits.js';
import { CATCH_UP_PAGE_BYTES, CATCH_UP_PAGE_ENTRIES, MAX_CATCH_UP_READS } from '../../src/server/feed-limits.js';

interface Read {
  name: string;
  from: number;
  bounds: { limit: number; maxBytes: number };
  cursor: unknown;
  answer(entries: number): void;
  fail(err: Error): void;
}

/** A source whose entriesFrom waits until the test answers it; `started` tells each read as it begins. */
function heldSource() {
  const reads: Read[] = [];
  let onRead: (() => void) | undefined;
  const src: FeedSource = {
    revision: 0,
    document: () => assert.fail('no document read'),
    error: (message) => assert.fail(message),
    entriesFrom: (name, from, bounds, cursor) =>
      new Promise<FeedPage>((resolve, reject) => {
        reads.push({
          name,
          from,
          bounds,
          cursor,
          answer: (n) => resolve({ firstSeq: from, entries: Array.from({ length: n }, () => ({}) as TranscriptEntry), end: from + n }),
          fail: reject,
        });
        onRead?.();
      }),
  };
  const nextRead = (): Promise<void> => new Promise((resolve) => (onRead = resolve));
  return { src, reads, nextRead };
}

const sink = (): NotificationSink => ({ notify: () => undefined, unsentBytes: () => 0, unsentFrames: () => 0, isClosed: false });

test('without a source nothing is read', async () => {
  const p = new CatchUpPages(undefined, undefined);
  assert.equal(await p.read('w1', 'a', 1, undefined), undefined);
  assert.deepEqual(p.counters, { running: 0, entriesInMemory: 0, entriesInMemoryPeak: 0, pages: 0 });
});

test('a read asks for one bounded page from where it is, counts it in memory until released, and tells the observer', async () => {
  const s = heldSource();
  const told: string[] = [];
  const p = new CatchUpPages(s.src, { pageRead: (sub, n) => told.push(`${sub} ${n}`) });
  const started = s.nextRead();
  const first = p.read('w1', 'a', 5, 'cur');
  await started;
  assert.deepEqual(s.reads.map((r) => [r.name, r.from, r.bounds, r.cursor]), [['a', 5, { limit: CATCH_UP_PAGE_ENTRIES, maxBytes: CATCH_UP_PAGE_BYTES }, 'cur']]);
  s.reads[0]!.answer(3);
  const page1 = await first;
  assert.equal(page1?.entries.length, 3);
  assert.deepEqual(told, ['w1 3']);
  assert.deepEqual(p.counters, { running: 0, entriesInMemory: 3, entriesInMemoryPeak: 3, pages: 1 });

  const again = s.nextRead();
  const second = p.read('w2', 'b', 1, undefined);
  await again;
  s.reads[1]!.answer(2);
  const page2 = await second;
  assert.deepEqual(p.counters, { running: 0, entriesInMemory: 5, entriesInMemoryPeak: 5, pages: 2 });
  p.released(page1!);
  assert.deepEqual(p.counters, { running: 0, entriesInMemory: 2, entriesInMemoryPeak: 5, pages: 2 }, 'the peak stays');
  p.released(page2!);
  assert.equal(p.counters.entriesInMemory, 0);
});

test(`at most ${MAX_CATCH_UP_READS} reads at once; a read over it starts when one ends, also when that one failed`, async () => {
  const s = heldSource();
  const p = new CatchUpPages(s.src, undefined);
  const all: Promise<FeedPage | undefined>[] = [];
  for (let i = 0; i < MAX_CATCH_UP_READS; i++) {
    const started = s.nextRead();
    all.push(p.read(`w${i}`, `n${i}`, 1, undefined));
    await started;
  }
  let fifthStarted = false;
  const fifth = s.nextRead().then(() => (fifthStarted = true));
  const extra = p.read('w-extra', 'extra', 1, undefined);
  const sixth = p.read('w-sixth', 'sixth', 1, undefined);
  // Each held read is a pending promise: let every microtask run, then look.
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(s.reads.length, MAX_CATCH_UP_READS, 'the fifth waits');
  assert.equal(fifthStarted, false);
  s.reads[0]!.fail(new Error('disk'));
  await assert.rejects(all[0]!, /disk/);
  await fifth;
  assert.deepEqual(s.reads.map((r) => r.name).slice(MAX_CATCH_UP_READS), ['extra'], 'one read ended, one more starts');
  const sixthStarts = s.nextRead();
  s.reads[1]!.answer(0);
  await sixthStarts;
  assert.equal(s.reads.at(-1)?.name, 'sixth');
  for (const r of s.reads.slice(2)) r.answer(1);
  await Promise.all([...all.slice(1), extra, sixth]);
  assert.equal(p.counters.pages, MAX_CATCH_UP_READS + 1, 'the failed read is no page');
});

test('close: a read waiting for its turn ends with nothing, and no read starts after', async () => {
  const s = heldSource();
  const p = new CatchUpPages(s.src, undefined);
  const running: Promise<FeedPage | undefined>[] = [];
  for (let i = 0; i < MAX_CATCH_UP_READS; i++) {
    const started = s.nextRead();
    running.push(p.read(`w${i}`, `n${i}`, 1, undefined));
    await started;
  }
  const waiting = p.read('w-wait', 'wait', 1, undefined);
  p.close();
  assert.equal(await waiting, undefined);
  for (const r of s.reads) r.answer(1);
  await Promise.all(running);
  assert.equal(await p.read('w-late', 'late', 1, undefined), undefined);
  assert.equal(s.reads.length, MAX_CATCH_UP_READS, 'nothing read after the close');
});

test("a connection's steps run one after another, another connection's beside them; a failed step does not stop the next", async () => {
  const p = new CatchUpPages(undefined, undefined);
  const a = sink();
  const b = sink();
  const log: string[] = [];
  let endA1!: () => void;
  const a1 = p.inTurn(a, () => (log.push('a1 start'), new Promise<string>((resolve) => (endA1 = () => resolve('a1')))));
  const a2 = p.inTurn(a, () => (log.push('a2 start'), Promise.reject(new Error('a2 failed'))));
  const a3 = p.inTurn(a, () => (log.push('a3 start'), Promise.resolve('a3')));
  const b1 = p.inTurn(b, () => (log.push('b1 start'), Promise.resolve('b1')));
  assert.equal(await b1, 'b1');
  assert.deepEqual(log, ['a1 start', 'b1 start'], "b's step does not wait for a's");
  endA1();
  assert.equal(await a1, 'a1');
  await assert.rejects(a2, /a2 failed/);
  assert.equal(await a3, 'a3');
  assert.deepEqual(log, ['a1 start', 'b1 start', 'a2 start', 'a3 start']);
});
