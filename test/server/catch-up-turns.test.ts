// The catch-up of returning subscribers on the feed alone, with a connection whose unsent bytes
// the test decides: the subscriptions of one connection take turns, a page each, and the next
// page is read only once the connection has taken the last, however many subscriptions wait.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StateDocument, TranscriptEntry } from '../../src/protocol/model.js';
import type { NotificationSink } from '../../src/server/feed-limits.js';
import { Subscriptions } from '../../src/server/subscriptions.js';
import { CATCH_UP_DRAINED_BYTES, CATCH_UP_PAGE_ENTRIES } from '../../src/server/feed-limits.js';

const N = 4 * CATCH_UP_PAGE_ENTRIES;
/** What one notification costs the connection, unsent: a page is far past the mark. */
const BYTES = Math.ceil((4 * CATCH_UP_DRAINED_BYTES) / CATCH_UP_PAGE_ENTRIES);
const entry = (i: number): TranscriptEntry => ({ ts: 't', role: 'user', text: `e${i}` });
const turnOver = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A connection that holds whatever it is sent until drain() hands it to the peer. */
function stalledSink(): NotificationSink & { seqs: Map<string, number[]>; drain(): void } {
  let unsent = 0;
  let waiters: { bytes: number; resolve(): void }[] = [];
  const seqs = new Map<string, number[]>();
  return {
    seqs,
    isClosed: false,
    notify: (_method, params) => {
      const p = params as { subscription: string; seq: number };
      seqs.set(p.subscription, [...(seqs.get(p.subscription) ?? []), p.seq]);
      unsent += BYTES;
    },
    unsentBytes: () => unsent,
    unsentFrames: () => Math.ceil(unsent / BYTES),
    whenUnsentAtMost: (bytes) => (unsent <= bytes ? Promise.resolve() : new Promise((resolve) => waiters.push({ bytes, resolve }))),
    drain() {
      unsent = 0;
      const w = waiters;
      waiters = [];
      for (const x of w) x.resolve();
    },
  };
}

test('4 subscriptions catching up on one stalled connection: one page is sent, then every one waits until it is taken', async () => {
  const sink = stalledSink();
  let waits = 0;
  const feed = new Subscriptions({ observer: { waiting: () => void waits++ } }, {
    revision: 0,
    document: () => ({ sessions: [] }) as unknown as StateDocument,
    entriesFrom: (_name, from, bounds) => {
      const to = Math.min(N, from + bounds.limit);
      return Promise.resolve({ firstSeq: from, entries: Array.from({ length: Math.max(0, to - from) }, (_, i) => entry(from + i)), end: N });
    },
    error: (message, err) => assert.fail(`${message}: ${String(err)}`),
  });
  const ids = Array.from({ length: 4 }, () => feed.subscribe(sink, { transcripts: ['a'], since: { transcripts: { a: -1 } } }).subscription);
  const sent = (): number => [...sink.seqs.values()].reduce((n, s) => n + s.length, 0);
  // Each round: the connection is stalled with one page, until it is drained.
  for (let round = 1; round <= 4 * 4; round++) {
    await turnOver();
    assert.equal(sent(), round * CATCH_UP_PAGE_ENTRIES, `round ${round}: one page more, not one per subscription`);
    assert.ok(waits >= 1);
    sink.drain();
  }
  await turnOver();
  for (const id of ids) assert.deepEqual(sink.seqs.get(id), Array.from({ length: N }, (_, i) => i), `${id}: every entry once, in order`);
  assert.equal(feed.catchUp.running, 0);
});
