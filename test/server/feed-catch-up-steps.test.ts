// A returning subscriber's catch-up between its steps, over a source and a connection the test
// answers: the wait for the connection to take what it holds (and the shortcut for one that cannot
// say), the wait every CATCH_UP_PAGE_ENTRIES replayed state notifications, the feed closed or the
// subscription ended while a step is under way, a transcript whose end is exactly the seq seen,
// the live entry read on for once only, the held notifications delivered until one overflows, and
// close() waiting for every catch-up.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Session, StateDocument, TranscriptEntry } from '../../src/protocol/model.js';
import type { FeedSource, NotificationSink } from '../../src/server/feed-limits.js';
import { CATCH_UP_DRAINED_BYTES, CATCH_UP_PAGE_ENTRIES } from '../../src/server/feed-limits.js';
import { Subscriptions } from '../../src/server/subscriptions.js';
import { scriptedSource } from '../helpers/scripted-feed-source.js';

const entry = (i: number): TranscriptEntry => ({ ts: 't', role: 'user', text: `e${i}` });
const row = (name: string): Session => ({ name, channelID: '', type: '', cmd: '' });
const doc = (sessions: Session[], extra: Record<string, unknown> = {}): StateDocument =>
  ({ home: { id: 'h', type: 'category' }, sessions, ...extra }) as StateDocument;

interface Sent {
  method: string;
  params: Record<string, unknown>;
}

/**
 * A connection holding `unsent` bytes; with `waits`, one that can say when it has taken them: each
 * whenUnsentAtMost is recorded and answered by the test.
 */
function conn(unsent = 0, waits = false) {
  const drains: { bytes: number; done(): void }[] = [];
  const c: NotificationSink & { sent: Sent[]; unsent: number; closed: boolean; drains: typeof drains } = {
    sent: [],
    unsent,
    closed: false,
    drains,
    notify: (method, params) => void c.sent.push({ method, params: params as Record<string, unknown> }),
    unsentBytes: () => c.unsent,
    unsentFrames: () => 0,
    get isClosed() {
      return c.closed;
    },
  };
  if (waits) c.whenUnsentAtMost = (bytes) => new Promise<void>((resolve) => drains.push({ bytes, done: resolve }));
  return c;
}

/** A source whose reads the test answers one by one; what it was told of failures in `errors`. */
const source = (revision = 0) => scriptedSource(() => doc([]), revision);

/** A feed whose catch-ups' ends and waits for the connection can be awaited. */
function feedOn(src: FeedSource, limits: { pendingBytes?: number; pendingNotifications?: number } = {}) {
  const ended = new Map<string, () => void>();
  const done = new Set<string>();
  let waited: (() => void) | undefined;
  const waits: string[] = [];
  const feed = new Subscriptions(
    {
      ...limits,
      observer: {
        ended: (id) => (done.add(id), ended.get(id)?.()),
        waiting: (id) => (waits.push(id), waited?.()),
      },
    },
    src,
  );
  const endOf = (id: string): Promise<void> => (done.has(id) ? Promise.resolve() : new Promise((resolve) => ended.set(id, resolve)));
  const nextWait = (): Promise<void> => new Promise((resolve) => (waited = resolve));
  return { feed, endOf, nextWait, waits, isDone: (id: string) => done.has(id) };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('a connection holding more than CATCH_UP_DRAINED_BYTES is waited for before a page is read; one holding exactly that is not', async () => {
  const s = source();
  const f = feedOn(s.src);
  const slow = conn(CATCH_UP_DRAINED_BYTES + 1, true);
  const waited = f.nextWait();
  const { subscription } = f.feed.subscribe(slow, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await waited;
  assert.deepEqual(slow.drains.map((d) => d.bytes), [CATCH_UP_DRAINED_BYTES], 'waits for the connection to hold at most that');
  await turn();
  assert.equal(s.reads.length, 0, 'no read while it waits');
  const read = s.nextRead();
  slow.unsent = 0;
  slow.drains[0]!.done();
  await read;
  s.reads[0]!.answer({ firstSeq: 1, entries: [], end: 1 });
  await f.endOf(subscription);

  const atBound = conn(CATCH_UP_DRAINED_BYTES, true);
  const read2 = s.nextRead();
  const second = f.feed.subscribe(atBound, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await read2;
  assert.deepEqual(atBound.drains, [], 'exactly at the bound: read at once');
  s.reads[1]!.answer({ firstSeq: 1, entries: [entry(1)], end: 2 });
  const read3 = s.nextRead();
  await read3;
  s.reads[2]!.answer({ firstSeq: 2, entries: [], end: 2 });
  await f.endOf(second.subscription);
  assert.deepEqual(f.waits, [subscription], 'only the first waited');
  assert.deepEqual(atBound.sent.map((m) => m.params.seq), [1]);
});

test('a connection that cannot say when it has taken what it holds is not waited for', async () => {
  const s = source();
  const f = feedOn(s.src);
  const c = conn(CATCH_UP_DRAINED_BYTES + 1);
  const read = s.nextRead();
  const { subscription } = f.feed.subscribe(c, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await read;
  s.reads[0]!.answer({ firstSeq: 1, entries: [entry(1)], end: 2 });
  const next = s.nextRead();
  await next;
  s.reads[1]!.answer({ firstSeq: 2, entries: [], end: 2 });
  await f.endOf(subscription);
  assert.deepEqual(f.waits, []);
  assert.deepEqual(s.errors, []);
  assert.deepEqual(c.sent.map((m) => `${m.method} ${String(m.params.seq)}`), ['transcript/didAppend 1']);
});

test(`replayed state notifications wait for the connection every ${CATCH_UP_PAGE_ENTRIES}; ended meanwhile, the rest is not sent`, async () => {
  const s = source();
  const f = feedOn(s.src);
  const rows = Array.from({ length: CATCH_UP_PAGE_ENTRIES + 10 }, (_, i) => row(`r${i}`));
  f.feed.stateCommitted(1, doc([]), doc(rows));
  s.src.revision = 1;
  const c = conn(CATCH_UP_DRAINED_BYTES + 1, true);
  const waited = f.nextWait();
  const { subscription } = f.feed.subscribe(c, { sessions: true, since: { epoch: 'E', revision: 0 } });
  await waited;
  assert.equal(c.sent.length, CATCH_UP_PAGE_ENTRIES, 'a page of them, then the wait');
  assert.equal(f.feed.remove(c, subscription), true);
  c.drains[0]!.done();
  await f.endOf(subscription);
  assert.equal(c.sent.length, CATCH_UP_PAGE_ENTRIES, 'none after the subscription ended');

  const c2 = conn(CATCH_UP_DRAINED_BYTES + 1, true);
  const waited2 = f.nextWait();
  const again = f.feed.subscribe(c2, { sessions: true, since: { epoch: 'E', revision: 0 } });
  await waited2;
  c2.unsent = 0;
  c2.drains[0]!.done();
  await f.endOf(again.subscription);
  assert.equal(c2.sent.length, CATCH_UP_PAGE_ENTRIES + 10, 'all of them once the connection took the first page');
  assert.deepEqual(f.waits, [subscription, again.subscription]);
});

test('a feed closed while a catch-up waits for its connection ends it without a read; close() resolves', async () => {
  const s = source();
  const f = feedOn(s.src);
  const c = conn(CATCH_UP_DRAINED_BYTES + 1, true);
  const waited = f.nextWait();
  const { subscription } = f.feed.subscribe(c, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await waited;
  await f.feed.close();
  assert.equal(f.isDone(subscription), true, 'the catch-up is over when close() resolves');
  assert.equal(s.reads.length, 0);
  assert.deepEqual(c.sent, []);
});

test('a page read while the feed closes is not sent, and no page follows; a read failing after the close is no overflow', async () => {
  const s = source();
  const f = feedOn(s.src);
  const c = conn();
  const read = s.nextRead();
  const { subscription } = f.feed.subscribe(c, { transcripts: ['a', 'b'], since: { transcripts: { a: 0, b: 0 } } });
  await read;
  const closing = f.feed.close();
  s.reads[0]!.answer({ firstSeq: 1, entries: [entry(1)], end: 2 });
  await closing;
  await f.endOf(subscription);
  assert.deepEqual(c.sent, [], 'the page read is let go');
  assert.equal(s.reads.length, 1);

  const s2 = source();
  const f2 = feedOn(s2.src);
  const c2 = conn();
  const read2 = s2.nextRead();
  const second = f2.feed.subscribe(c2, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await read2;
  const closing2 = f2.feed.close();
  s2.reads[0]!.fail(new Error('EIO'));
  await closing2;
  await f2.endOf(second.subscription);
  assert.equal(s2.errors.length, 1, 'the failure is told to the source');
  assert.deepEqual(c2.sent, [], 'but the closed feed sends no overflow');
});

test('close() waits for every catch-up under way, not only the first to end', async () => {
  const s = source();
  const f = feedOn(s.src);
  const first = conn();
  const second = conn();
  let read = s.nextRead();
  const a = f.feed.subscribe(first, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await read;
  read = s.nextRead();
  const b = f.feed.subscribe(second, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await read;
  let closed = false;
  const closing = f.feed.close().then(() => (closed = true));
  s.reads[0]!.answer({ firstSeq: 1, entries: [], end: 1 });
  await f.endOf(a.subscription);
  await turn();
  assert.equal(closed, false, 'one catch-up still reads');
  s.reads[1]!.answer({ firstSeq: 1, entries: [], end: 1 });
  await closing;
  assert.equal(f.isDone(b.subscription), true);
  assert.equal(f.feed.catchUp.running, 0);
});

test('a transcript whose end is exactly the seq seen was begun again: its first page is not sent, it is read from 0', async () => {
  const s = source();
  const f = feedOn(s.src);
  const c = conn();
  let read = s.nextRead();
  const { subscription } = f.feed.subscribe(c, { transcripts: '*', since: { transcripts: { a: 2 } } });
  await read;
  assert.equal(s.reads[0]!.from, 3);
  read = s.nextRead();
  s.reads[0]!.answer({ firstSeq: 0, entries: [entry(0), entry(1)], end: 2 });
  await read;
  assert.equal(s.reads[1]!.from, 0, 'read again from the start');
  read = s.nextRead();
  s.reads[1]!.answer({ firstSeq: 0, entries: [entry(0), entry(1)], end: 2 });
  await read;
  s.reads[2]!.answer({ firstSeq: 2, entries: [], end: 2 });
  await f.endOf(subscription);
  assert.deepEqual(c.sent.map((m) => m.params.seq), [0, 1], 'each once');
});

test('the live entry is read on for once: a file that lost it ends the catch-up', async () => {
  const s = source();
  const f = feedOn(s.src);
  const c = conn();
  let read = s.nextRead();
  const { subscription } = f.feed.subscribe(c, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await read;
  f.feed.transcriptAppended('a', 1, entry(1));
  read = s.nextRead();
  s.reads[0]!.answer({ firstSeq: 1, entries: [], end: 1 });
  await read;
  assert.equal(s.reads[1]!.from, 1, 'read on for the live entry');
  const next = s.nextRead().then(() => 'another read');
  s.reads[1]!.answer({ firstSeq: 1, entries: [], end: 1 });
  assert.equal(await Promise.race([f.endOf(subscription).then(() => 'ended'), next]), 'ended');
  assert.equal(s.reads.length, 2);
  assert.deepEqual(c.sent, []);
});

test('live entries of the highest seq decide the read on, whatever order they came in', async () => {
  const s = source();
  const f = feedOn(s.src);
  const c = conn();
  let read = s.nextRead();
  const { subscription } = f.feed.subscribe(c, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await read;
  f.feed.transcriptAppended('a', 2, entry(2));
  f.feed.transcriptAppended('a', 1, entry(1));
  read = s.nextRead();
  s.reads[0]!.answer({ firstSeq: 1, entries: [entry(1)], end: 2 });
  await read;
  read = s.nextRead();
  s.reads[1]!.answer({ firstSeq: 2, entries: [], end: 2 });
  await read;
  assert.equal(s.reads[2]!.from, 2, 'seq 2 was appended live: read on for it');
  read = s.nextRead();
  s.reads[2]!.answer({ firstSeq: 2, entries: [entry(2)], end: 3 });
  await read;
  s.reads[3]!.answer({ firstSeq: 3, entries: [], end: 3 });
  await f.endOf(subscription);
  assert.deepEqual(c.sent.map((m) => m.params.seq), [1, 2]);
});

test('held notifications are delivered after the catch-up until one overflows the connection; none after it', async () => {
  const s = source(5);
  const f = feedOn(s.src, { pendingBytes: 10 });
  const c = conn();
  const { subscription } = f.feed.subscribe(c, { sessions: true, participants: '*', since: { epoch: 'E', revision: 5 } });
  f.feed.stateCommitted(6, doc([]), doc([], { n: 6 }));
  f.feed.participantAdded('p', 'u1');
  f.feed.stateCommitted(7, doc([]), doc([], { n: 7 }));
  assert.deepEqual(c.sent, [], 'held');
  c.unsent = 11;
  await f.endOf(subscription);
  assert.deepEqual(c.sent, [{ method: 'watch/overflow', params: { subscription } }], 'the first overflows it; the rest is not sent');
  assert.equal(f.feed.countOf(c), 0);

  const ok = conn();
  const second = f.feed.subscribe(ok, { sessions: true, participants: '*', transcripts: '*', since: { epoch: 'E', revision: 5 } });
  f.feed.stateCommitted(8, doc([]), doc([], { n: 8 }));
  f.feed.participantAdded('p', 'u2');
  f.feed.transcriptAppended('t', 0, entry(0));
  assert.deepEqual(ok.sent.map((m) => m.method), ['transcript/didAppend'], 'a transcript not caught up is live at once');
  await f.endOf(second.subscription);
  assert.deepEqual(ok.sent.map((m) => m.method), ['transcript/didAppend', 'state/didChange', 'participants/didAdd'], 'then the held ones, in order');
  f.feed.participantAdded('p', 'u3');
  assert.equal(ok.sent.at(-1)?.params.userId, 'u3', 'and from then on live ones at once');
});

test('a subscription ended while its catch-up waits for the connection reads nothing more', async () => {
  const s = source();
  const f = feedOn(s.src);
  const c = conn(CATCH_UP_DRAINED_BYTES + 1, true);
  const waited = f.nextWait();
  const { subscription } = f.feed.subscribe(c, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await waited;
  assert.equal(f.feed.remove(c, subscription), true);
  c.unsent = 0;
  c.drains[0]!.done();
  await f.endOf(subscription);
  assert.equal(s.reads.length, 0);
  assert.deepEqual(c.sent, []);
});

test('a connection closed while a page is read ends the catch-up: no read on for a live entry', async () => {
  const s = source();
  const f = feedOn(s.src);
  const c = conn();
  const read = s.nextRead();
  const { subscription } = f.feed.subscribe(c, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await read;
  f.feed.transcriptAppended('a', 1, entry(1));
  c.closed = true;
  const next = s.nextRead().then(() => 'another read');
  s.reads[0]!.answer({ firstSeq: 1, entries: [], end: 1 });
  assert.equal(await Promise.race([f.endOf(subscription).then(() => 'ended'), next]), 'ended');
  assert.equal(s.reads.length, 1);
});

test('the refusals and overflows name what they are about', async () => {
  const f = feedOn(source(5).src, { pendingNotifications: 1 });
  const closed = conn();
  closed.closed = true;
  assert.throws(() => f.feed.add(closed, {}), /the connection is closed; nothing can be subscribed on it/);
  const c = conn();
  const { subscription } = f.feed.subscribe(c, { sessions: true, since: { epoch: 'E', revision: 5 } });
  f.feed.stateCommitted(6, doc([]), doc([], { n: 6 }));
  f.feed.stateCommitted(7, doc([]), doc([], { n: 7 }));
  assert.deepEqual(c.sent, [{ method: 'watch/overflow', params: { subscription } }], 'the second held one is past the bound of 1');
  await f.endOf(subscription);
});

test('a page whose delivery overflows the connection stops there (one overflow) and is let go from memory', async () => {
  const s = source();
  const f = feedOn(s.src, { pendingBytes: 10 });
  const c = conn(11);
  const read = s.nextRead();
  const { subscription } = f.feed.subscribe(c, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await read;
  s.reads[0]!.answer({ firstSeq: 1, entries: [entry(1), entry(2), entry(3)], end: 4 });
  await f.endOf(subscription);
  assert.deepEqual(c.sent, [{ method: 'watch/overflow', params: { subscription } }]);
  assert.equal(f.feed.catchUp.entriesInMemory, 0, 'the page is released');
  assert.equal(s.reads.length, 1);
});

test('a subscriber that saw no revision, or watches no sessions, is owed no state part', async () => {
  const s = source(3);
  const f = feedOn(s.src);
  f.feed.stateCommitted(1, doc([]), doc([], { n: 1 }));
  const noRevision = conn();
  const a = f.feed.subscribe(noRevision, { sessions: true, since: { epoch: 'E' } });
  const noSessions = conn();
  const b = f.feed.subscribe(noSessions, { participants: '*', since: { epoch: 'E', revision: 0 } });
  await f.endOf(a.subscription);
  await f.endOf(b.subscription);
  assert.deepEqual(noRevision.sent, []);
  assert.deepEqual(noSessions.sent, []);
});

test('a feed without an observer waits for its connection and ends its catch-ups all the same', { timeout: 30_000 }, async () => {
  const s = source();
  const feed = new Subscriptions({}, s.src);
  const c = conn(CATCH_UP_DRAINED_BYTES + 1, true);
  let asked!: () => void;
  const waiting = new Promise<void>((resolve) => (asked = resolve));
  const when = c.whenUnsentAtMost!.bind(c);
  c.whenUnsentAtMost = (bytes) => (asked(), when(bytes));
  feed.subscribe(c, { transcripts: '*', since: { transcripts: { a: 0 } } });
  await waiting;
  const read = s.nextRead();
  c.unsent = 0;
  c.drains[0]!.done();
  await read;
  s.reads[0]!.answer({ firstSeq: 1, entries: [entry(1)], end: 2 });
  const next = s.nextRead();
  await next;
  s.reads[1]!.answer({ firstSeq: 2, entries: [], end: 2 });
  await feed.close();
  assert.equal(feed.catchUp.running, 0);
  assert.deepEqual(c.sent.map((m) => m.params.seq), [1]);
});
