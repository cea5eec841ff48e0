// A returning subscriber's catch-up on the feed alone, over a source whose pages the test decides:
// a read that fails ends the subscription with watch/overflow and is told to the source; close()
// resolves only once every catch-up under way is over; a subscriber with no `since` starts no
// catch-up; the transcripts of `since` outside the filter are not read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StateDocument, TranscriptEntry } from '../../src/protocol/model.js';
import type { FeedSource, NotificationSink } from '../../src/server/feed-limits.js';
import { Subscriptions } from '../../src/server/subscriptions.js';
import { scriptedSource } from '../helpers/scripted-feed-source.js';

const entry = (i: number): TranscriptEntry => ({ ts: 't', role: 'user', text: `e${i}` });

/** A connection that takes everything at once and records it. */
function sink(): NotificationSink & { sent: { method: string; params: Record<string, unknown> }[] } {
  const s = {
    sent: [] as { method: string; params: Record<string, unknown> }[],
    isClosed: false,
    notify: (method: string, params: unknown) => void s.sent.push({ method, params: params as Record<string, unknown> }),
    unsentBytes: () => 0,
    unsentFrames: () => 0,
  };
  return s;
}

/** A source whose entriesFrom the test answers (or fails) read by read; `errors` what it was told. */
const source = () => scriptedSource(() => ({ home: { id: 'h', type: 'category' }, sessions: [] }) as unknown as StateDocument);

/** A feed whose catch-ups' ends can be awaited. */
function feedOn(src: FeedSource) {
  const ended = new Map<string, () => void>();
  const done = new Set<string>();
  const feed = new Subscriptions({ observer: { ended: (id) => (done.add(id), ended.get(id)?.()) } }, src);
  const endOf = (id: string): Promise<void> => (done.has(id) ? Promise.resolve() : new Promise((resolve) => ended.set(id, resolve)));
  return { feed, endOf };
}

test('a catch-up read that fails ends the subscription with watch/overflow, and the source is told why', async () => {
  const s = source();
  const { feed, endOf } = feedOn(s.src);
  const conn = sink();
  const read = s.nextRead();
  const { subscription } = feed.subscribe(conn, { transcripts: '*', since: { transcripts: { a: 4 } } });
  await read;
  assert.deepEqual(s.reads.map((r) => [r.name, r.from]), [['a', 5]], 'read from the seq after the one seen');
  s.reads[0]!.fail(new Error('EIO'));
  await endOf(subscription);
  assert.deepEqual(conn.sent, [{ method: 'watch/overflow', params: { subscription } }]);
  assert.equal(s.errors.length, 1);
  assert.match(s.errors[0]!, new RegExp(`what subscription ${subscription} missed could not be read`));
  assert.equal(feed.countOf(conn), 0, 'the subscription is gone');
  feed.transcriptAppended('a', 9, entry(9));
  assert.equal(conn.sent.length, 1, 'nothing live after the overflow');
});

test('close() resolves once the catch-ups under way are over, not before; with none, at once', async () => {
  await feedOn(source().src).feed.close();
  const s2 = source();
  const f2 = feedOn(s2.src);
  const conn = sink();
  const read = s2.nextRead();
  const { subscription } = f2.feed.subscribe(conn, { transcripts: ['a'], since: { transcripts: { a: 0 } } });
  await read;
  let closed = false;
  const closing = f2.feed.close().then(() => (closed = true));
  // The page being read is finished first: close waits for it.
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(closed, false, 'close resolved while a catch-up was still reading');
  s2.reads[0]!.answer({ firstSeq: 1, entries: [entry(1)], end: 2 });
  await closing;
  await f2.endOf(subscription);
  assert.equal(s2.reads.length, 1, 'no page read after the close');
});

test('without since nothing is read; transcripts of since outside the filter are not read', async () => {
  const s = source();
  const { feed, endOf } = feedOn(s.src);
  const plain = feed.subscribe(sink(), { transcripts: '*' });
  assert.deepEqual(plain, { subscription: plain.subscription, revision: 0, epoch: 'E' });
  assert.match(plain.subscription, /^w\d+$/);
  const conn = sink();
  const read = s.nextRead();
  const { subscription } = feed.subscribe(conn, { transcripts: ['b'], since: { transcripts: { a: 1, b: 2 } } });
  await read;
  s.reads[0]!.answer({ firstSeq: 3, entries: [entry(3)], end: 4 });
  const next = s.nextRead();
  await next;
  s.reads[1]!.answer({ firstSeq: 4, entries: [], end: 4 });
  await endOf(subscription);
  assert.deepEqual(s.reads.map((r) => [r.name, r.from]), [['b', 3], ['b', 4]], 'only b, the filtered one');
  assert.deepEqual(conn.sent.map((m) => `${m.method} ${String(m.params.name)} ${String(m.params.seq)}`), ['transcript/didAppend b 3']);
});

test('a transcript removed and begun again while away (its end at or below the seq seen) is sent whole, from seq 0', async () => {
  const s = source();
  const { feed, endOf } = feedOn(s.src);
  const conn = sink();
  let read = s.nextRead();
  const { subscription } = feed.subscribe(conn, { transcripts: '*', since: { transcripts: { a: 9 } } });
  await read;
  read = s.nextRead();
  s.reads[0]!.answer({ firstSeq: 0, entries: [entry(0), entry(1)], end: 2 }); // from 10: a file with two entries now
  await read;
  assert.equal(s.reads[1]!.from, 0, 'read again from the start');
  read = s.nextRead();
  s.reads[1]!.answer({ firstSeq: 0, entries: [entry(0), entry(1)], end: 2 });
  await read;
  s.reads[2]!.answer({ firstSeq: 2, entries: [], end: 2 });
  await endOf(subscription);
  assert.deepEqual(conn.sent.map((m) => Number(m.params.seq)), [0, 1], 'each entry once, the first page not sent');
});

test('an entry appended live while its transcript is caught up is read from the file, once', async () => {
  const s = source();
  const { feed, endOf } = feedOn(s.src);
  const conn = sink();
  let read = s.nextRead();
  const { subscription } = feed.subscribe(conn, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await read;
  feed.transcriptAppended('a', 2, entry(2)); // live, while the file is read: not sent live
  read = s.nextRead();
  s.reads[0]!.answer({ firstSeq: 1, entries: [entry(1)], end: 2 });
  await read;
  read = s.nextRead();
  s.reads[1]!.answer({ firstSeq: 2, entries: [], end: 2 }); // the read found the end before the live entry
  await read;
  assert.equal(s.reads[2]!.from, 2, 'read on for the live entry, once');
  read = s.nextRead();
  s.reads[2]!.answer({ firstSeq: 2, entries: [entry(2)], end: 3 });
  await read;
  s.reads[3]!.answer({ firstSeq: 3, entries: [], end: 3 });
  await endOf(subscription);
  assert.deepEqual(conn.sent.map((m) => Number(m.params.seq)), [1, 2]);
  feed.transcriptAppended('a', 3, entry(3));
  assert.deepEqual(conn.sent.map((m) => Number(m.params.seq)), [1, 2, 3], 'live once the catch-up is over');
});
