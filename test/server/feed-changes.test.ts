// The change feed on its own (src/server/subscriptions.ts), fed commits directly, with sinks that
// record what they are sent: which row and field changes a state commit is told as, who is told
// (the filters), what a returning subscriber is replayed or resynced with, and the bookkeeping of
// subscriptions per connection. Ordered by what the feed calls, with no server and no timing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ResponseError } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../../src/protocol/errors.js';
import type { Session, StateDocument } from '../../src/protocol/model.js';
import type { FeedSource, NotificationSink, SubscriptionLimits } from '../../src/server/feed-limits.js';
import { Subscriptions } from '../../src/server/subscriptions.js';
import { MAX_PENDING_BYTES_WHEN_CROWDED, MAX_REPLAY_REVISIONS, MAX_REPLAY_ROW_CHANGES, MAX_SUBSCRIPTIONS_PER_CONNECTION } from '../../src/server/feed-limits.js';

interface Sent {
  method: string;
  params: Record<string, unknown>;
}

/** A connection that records what it is sent; `unsent` bytes as the test sets them. */
function recorder(unsent = 0): NotificationSink & { sent: Sent[]; unsent: number; closed: boolean } {
  const sink = {
    sent: [] as Sent[],
    unsent,
    closed: false,
    notify: (method: string, params: unknown) => void sink.sent.push({ method, params: params as Record<string, unknown> }),
    unsentBytes: () => sink.unsent,
    unsentFrames: () => 0,
    get isClosed() {
      return sink.closed;
    },
  };
  return sink;
}

const row = (name: string, extra: Partial<Session> = {}): Session => ({ name, channelID: '', type: '', cmd: '', ...extra });
const doc = (sessions: Session[] | null, extra: Record<string, unknown> = {}): StateDocument =>
  ({ home: { id: 'h', type: 'category' }, sessions, ...extra }) as StateDocument;
/** What a sink was told of state changes, one line each. */
const told = (s: { sent: Sent[] }): string[] =>
  s.sent.map(({ method, params: p }) =>
    method === 'session/didChange' ? `${String(p.revision)} ${String(p.kind)} ${String(p.name)}`
      : method === 'state/didChange' ? `${String(p.revision)} fields ${(p.fields as string[]).join(',')}`
        : method);

/** A source whose revision the test moves; entriesFrom has nothing. */
function source(epoch = 'E1'): FeedSource & { revision: number; resyncs: number } {
  const src = {
    revision: 0,
    epoch,
    resyncs: 0,
    document: () => {
      src.resyncs++;
      return doc([row('now')]);
    },
    entriesFrom: (_name: string, from: number) => Promise.resolve({ firstSeq: from, entries: [], end: from }),
    error: (message: string) => assert.fail(message),
  };
  return src;
}

/** A feed whose catch-ups can be awaited: `ended(id)` resolves once that subscription's is over. */
function observed(limits: SubscriptionLimits = {}, src?: FeedSource): { feed: Subscriptions; ended(id: string): Promise<void> } {
  const done = new Set<string>();
  const waiters = new Map<string, () => void>();
  const feed = new Subscriptions({ ...limits, observer: { ended: (id) => (done.add(id), waiters.get(id)?.()) } }, src);
  const ended = (id: string): Promise<void> => (done.has(id) ? Promise.resolve() : new Promise((resolve) => waiters.set(id, resolve)));
  return { feed, ended };
}

test('a commit is told as its row changes (added, updated, removed, by a name\'s first row) and the top-level fields that differ', () => {
  const feed = new Subscriptions();
  const s = recorder();
  const sub = feed.add(s, { sessions: true });
  const a = row('a');
  const b = row('b');
  const twin = row('a', { cmd: 'second row' });
  feed.stateCommitted(1, doc([a, b, twin], { workspace: '/w', source: 's' }), doc([row('a', { archived: true }), twin, row('c')], { workspace: '/w', source: 't', statusMessageID: 'm' }));
  assert.deepEqual(told(s), ['1 updated a', '1 added c', '1 removed b', '1 fields source,statusMessageID']);
  assert.deepEqual(s.sent[0]?.params, { subscription: sub, revision: 1, kind: 'updated', name: 'a', session: row('a', { archived: true }) });
  assert.deepEqual(s.sent[2]?.params, { subscription: sub, revision: 1, kind: 'removed', name: 'b' });
  assert.deepEqual(s.sent[3]?.params, { subscription: sub, revision: 1, fields: ['source', 'statusMessageID'] });
});

test('a field whose value is equal (a new object of the same content) is not told; rows kept by identity are not either', () => {
  const feed = new Subscriptions();
  const s = recorder();
  feed.add(s, { sessions: true });
  const a = row('a');
  feed.stateCommitted(1, doc([a], { home: { id: 'h', type: 'category' } }), doc([a], { home: { id: 'h', type: 'category' } }));
  assert.deepEqual(told(s), []);
  feed.stateCommitted(2, doc([a], { home: { id: 'h', type: 'category' } }), doc([a], { home: { id: 'h2', type: 'category' } }));
  assert.deepEqual(told(s), ['2 fields home']);
});

test('"sessions" is listed when the row events cannot rebuild the rows: a reorder, a second row of a name, null against []', () => {
  const cases: [string, Session[] | null, Session[] | null, string[]][] = [];
  const a = row('a');
  const b = row('b');
  const a2 = row('a', { cmd: '2' });
  cases.push(['reordered', [a, b], [b, a], ['1 fields sessions']]);
  cases.push(['a second row changed', [a, a2], [a, row('a', { cmd: '3' })], ['1 fields sessions']]);
  cases.push(['[] to null', [], null, ['1 fields sessions']]);
  cases.push(['null to []', null, [], ['1 fields sessions']]);
  cases.push(['null to rows', null, [a], ['1 added a']]);
  cases.push(['rows to none', [a], [], ['1 removed a']]);
  const c = row('c');
  cases.push(['a row dropped from the middle, one added at the end', [a, b, c], [a, c, row('d')], ['1 added d', '1 removed b']]);
  cases.push(['an added row not at the end', [a], [row('z'), a], ['1 added z', '1 fields sessions']]);
  cases.push(['a row more than the events say', [a], [a, a], ['1 fields sessions']]);
  cases.push(['a row fewer', [a, a], [a], ['1 fields sessions']]);
  cases.push(['the second row of a name removed with the first updated', [a, a2], [row('a', { cmd: 'x' })], ['1 updated a', '1 fields sessions']]);
  for (const [what, before, after, expected] of cases) {
    const feed = new Subscriptions();
    const s = recorder();
    feed.add(s, { sessions: true });
    feed.stateCommitted(1, doc(before), doc(after));
    assert.deepEqual(told(s), expected, what);
  }
});

test('who is told: sessions for state, transcripts and participants by "*" or by name; a closed connection is dropped', () => {
  const feed = new Subscriptions();
  const all = recorder();
  const named = recorder();
  const none = recorder();
  const closed = recorder();
  feed.add(all, { sessions: true, transcripts: '*', participants: '*' });
  feed.add(named, { transcripts: ['a'], participants: ['b'] });
  feed.add(none, {});
  feed.add(closed, { transcripts: '*' });
  closed.closed = true;
  const entry = { ts: 't', role: 'user', text: 'x' };
  feed.transcriptAppended('a', 0, entry);
  feed.transcriptAppended('b', 0, entry);
  feed.participantAdded('a', 'u1');
  feed.participantAdded('b', 'u2');
  feed.stateCommitted(1, doc([]), doc([row('a')]));
  const names = (s: { sent: Sent[] }) => s.sent.map((m) => `${m.method} ${String(m.params.name)}`);
  assert.deepEqual(names(all), ['transcript/didAppend a', 'transcript/didAppend b', 'participants/didAdd a', 'participants/didAdd b', 'session/didChange a']);
  assert.deepEqual(names(named), ['transcript/didAppend a', 'participants/didAdd b']);
  assert.deepEqual(none.sent, []);
  assert.deepEqual(closed.sent, [], 'a closed connection is sent nothing');
  assert.equal(feed.countOf(closed), 0, 'and its subscription is gone');
  assert.equal(feed.size, 3);
  assert.deepEqual(named.sent[0]?.params, { subscription: 'w2', name: 'a', seq: 0, entry });
  assert.deepEqual(named.sent[1]?.params, { subscription: 'w2', name: 'b', userId: 'u2' });
});

test(`subscriptions per connection: ids w1, w2…, at most ${MAX_SUBSCRIPTIONS_PER_CONNECTION}, none on a closed one; remove only by its owner; removeAll`, () => {
  const feed = new Subscriptions();
  const s = recorder();
  const other = recorder();
  const ids = Array.from({ length: MAX_SUBSCRIPTIONS_PER_CONNECTION }, () => feed.add(s, { transcripts: '*' }));
  assert.equal(ids[0], 'w1');
  assert.equal(ids[1], 'w2');
  assert.throws(() => feed.add(s, {}), (e) => e instanceof ResponseError && e.code === ErrorCodes.InvalidRequest && /at most 64 .*Got 64 open/.test(e.message));
  assert.equal(feed.add(other, {}), `w${MAX_SUBSCRIPTIONS_PER_CONNECTION + 1}`, 'another connection is not affected');
  assert.equal(feed.countOf(s), MAX_SUBSCRIPTIONS_PER_CONNECTION);
  assert.equal(feed.size, MAX_SUBSCRIPTIONS_PER_CONNECTION + 1);
  assert.equal(feed.remove(other, 'w1'), false, 'not its owner');
  assert.equal(feed.remove(s, 'w999'), false);
  assert.equal(feed.remove(s, 'w1'), true);
  assert.equal(feed.remove(s, 'w1'), false, 'already gone');
  assert.equal(feed.countOf(s), MAX_SUBSCRIPTIONS_PER_CONNECTION - 1);
  feed.add(s, {});
  feed.removeAll(s);
  assert.equal(feed.countOf(s), 0);
  assert.equal(feed.size, 1);
  feed.transcriptAppended('a', 0, { ts: 't', role: 'user', text: 'x' });
  assert.deepEqual(s.sent, [], 'nothing after removeAll');
  const last = recorder();
  const only = feed.add(last, {});
  assert.equal(feed.remove(last, only), true);
  assert.equal(feed.countOf(last), 0);
  const closing = recorder();
  closing.closed = true;
  assert.throws(() => feed.add(closing, {}), (e) => e instanceof ResponseError && e.code === ErrorCodes.InvalidRequest);
});

test('a returning subscriber of this epoch is replayed the commits after its revision, then gets the live ones', async () => {
  const src = source();
  const { feed, ended } = observed({}, src);
  const a = row('a');
  const b = row('b');
  feed.stateCommitted(1, doc([]), doc([a]));
  feed.stateCommitted(2, doc([a]), doc([a, b], { workspace: '/w' }));
  feed.stateCommitted(3, doc([a, b], { workspace: '/w' }), doc([b], { workspace: '/w' }));
  src.revision = 3;
  const s = recorder();
  const got = feed.subscribe(s, { sessions: true, since: { epoch: 'E1', revision: 1 } });
  assert.deepEqual(got, { subscription: 'w1', revision: 3, epoch: 'E1' });
  feed.stateCommitted(4, doc([b], { workspace: '/w' }), doc([b], { workspace: '/x' }));
  assert.deepEqual(s.sent, [], 'nothing before the reply is on its way; the live commit is held');
  await ended(got.subscription);
  assert.deepEqual(told(s), ['2 added b', '2 fields workspace', '3 removed a', '4 fields workspace']);
  assert.equal(src.resyncs, 0);
  const upToDate = recorder();
  const again = feed.subscribe(upToDate, { sessions: true, since: { epoch: 'E1', revision: 3 } });
  src.revision = 4;
  feed.stateCommitted(5, doc([b]), doc([b, a]));
  await ended(again.subscription);
  assert.deepEqual(told(upToDate), ['5 added a'], 'what it saw is not sent again');
});

test('a returning subscriber of another epoch, from the future, or from before what is kept gets one state/resync', async () => {
  const src = source();
  const { feed, ended } = observed({}, src);
  for (let r = 1; r <= MAX_REPLAY_REVISIONS + 1; r++) feed.stateCommitted(r, doc([]), doc([], { n: r }));
  src.revision = MAX_REPLAY_REVISIONS + 1;
  const cases: [string, { epoch?: string; revision: number }, string][] = [
    ['another epoch', { epoch: 'E0', revision: 5 }, 'state/resync'],
    ['no epoch', { revision: 5 }, 'state/resync'],
    ['a revision past now', { epoch: 'E1', revision: MAX_REPLAY_REVISIONS + 2 }, 'state/resync'],
    ['older than the kept commits', { epoch: 'E1', revision: 0 }, 'state/resync'],
    ['the oldest kept commit is the next', { epoch: 'E1', revision: 1 }, '2 fields n'],
  ];
  for (const [what, since, first] of cases) {
    const s = recorder();
    const { subscription } = feed.subscribe(s, { sessions: true, since });
    await ended(subscription);
    assert.equal(told(s)[0], first, what);
    if (first === 'state/resync') {
      assert.equal(s.sent.length, 1, what);
      assert.deepEqual(s.sent[0]?.params, { subscription, revision: MAX_REPLAY_REVISIONS + 1, epoch: 'E1', state: doc([row('now')]) }, what);
    }
  }
  const noSessions = recorder();
  const quiet = feed.subscribe(noSessions, { transcripts: '*', since: { epoch: 'E0', revision: 1 } });
  feed.transcriptAppended('a', 0, { ts: 't', role: 'user', text: 'x' });
  await ended(quiet.subscription);
  assert.deepEqual(noSessions.sent.map((m) => m.method), ['transcript/didAppend'], 'no state part without sessions');
});

test(`the commits kept for replay are bounded by their row changes too (${MAX_REPLAY_ROW_CHANGES})`, async () => {
  const src = source();
  const { feed, ended } = observed({}, src);
  const rows = Array.from({ length: MAX_REPLAY_ROW_CHANGES / 2 }, (_, i) => row(`r${i}`));
  feed.stateCommitted(1, doc([]), doc([row('x')]));
  feed.stateCommitted(2, doc([]), doc(rows));
  feed.stateCommitted(3, doc([]), doc(rows.map((r) => row(r.name, { cmd: 'c' }))));
  src.revision = 3;
  const fromOne = recorder();
  await ended(feed.subscribe(fromOne, { sessions: true, since: { epoch: 'E1', revision: 1 } }).subscription);
  assert.equal(told(fromOne).filter((l) => l.startsWith('2 added')).length, MAX_REPLAY_ROW_CHANGES / 2, 'exactly at the bound: all kept');
  feed.stateCommitted(4, doc([]), doc([row('y')]));
  src.revision = 4;
  const again = recorder();
  await ended(feed.subscribe(again, { sessions: true, since: { epoch: 'E1', revision: 1 } }).subscription);
  assert.equal(again.sent[0]?.method, 'state/resync', 'one row change past it: the oldest commit is let go');
});

test('a feed without a source has its own epoch, answers revision 0 and resyncs nobody', async () => {
  const { feed, ended } = observed();
  const other = new Subscriptions();
  assert.match(feed.epoch, /^[0-9a-f-]{36}$/);
  assert.notEqual(feed.epoch, other.epoch);
  const s = recorder();
  const got = feed.subscribe(s, { sessions: true, since: { epoch: 'elsewhere', revision: 3 } });
  assert.equal(got.revision, 0);
  feed.stateCommitted(1, doc([]), doc([row('a')]));
  await ended(got.subscription);
  assert.deepEqual(told(s), ['1 added a']);
});

test(`a crowded feed overflows a connection holding more than ${MAX_PENDING_BYTES_WHEN_CROWDED} unsent bytes; one holding less, or an uncrowded feed, is not`, () => {
  const feed = new Subscriptions({ pendingBytesInTotal: 2 * MAX_PENDING_BYTES_WHEN_CROWDED });
  const heavy = recorder(MAX_PENDING_BYTES_WHEN_CROWDED + 1);
  const light = recorder(MAX_PENDING_BYTES_WHEN_CROWDED);
  const entry = { ts: 't', role: 'user', text: 'x' };
  feed.add(heavy, { transcripts: '*' });
  feed.add(light, { transcripts: '*' });
  feed.transcriptAppended('a', 0, entry);
  assert.deepEqual([heavy.sent[0]?.method, light.sent[0]?.method], ['watch/overflow', 'transcript/didAppend'], 'total one byte past the bound');
  const calm = new Subscriptions({ pendingBytesInTotal: 2 * MAX_PENDING_BYTES_WHEN_CROWDED + 1 });
  const heavy2 = recorder(MAX_PENDING_BYTES_WHEN_CROWDED + 1);
  calm.add(heavy2, { transcripts: '*' });
  calm.add(recorder(MAX_PENDING_BYTES_WHEN_CROWDED), { transcripts: '*' });
  calm.transcriptAppended('a', 0, entry);
  assert.equal(heavy2.sent[0]?.method, 'transcript/didAppend', 'total exactly at the bound: not crowded');
  const gone = recorder(10 * MAX_PENDING_BYTES_WHEN_CROWDED);
  calm.remove(gone, calm.add(gone, { transcripts: '*' }));
  calm.transcriptAppended('a', 1, entry);
  assert.equal(heavy2.sent[1]?.method, 'transcript/didAppend', 'a connection with no subscription left does not count');
  assert.deepEqual(heavy.sent[0]?.params, { subscription: 'w1' });
  assert.equal(feed.countOf(heavy), 0, 'the overflowed subscription is gone');
});

test('live notifications held during a catch-up overflow the subscription past the notification bound', async () => {
  const src = source();
  const { feed, ended } = observed({ pendingNotifications: 3 }, src);
  const s = recorder();
  const { subscription } = feed.subscribe(s, { sessions: true, since: { epoch: 'E1', revision: 0 } });
  for (let r = 1; r <= 4; r++) feed.stateCommitted(r, doc([]), doc([], { n: r }));
  assert.deepEqual(s.sent.map((m) => m.method), ['watch/overflow'], 'the fourth held one is past 3');
  assert.equal(feed.countOf(s), 0);
  await ended(subscription);
  assert.deepEqual(s.sent.map((m) => m.method), ['watch/overflow'], 'and its catch-up sends nothing after');
});
