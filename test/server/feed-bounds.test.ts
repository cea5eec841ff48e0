// The change feed's per-connection bounds on the feed alone, with a connection that reports what it
// holds unsent: a notification goes out while the connection holds at most MAX_PENDING_BYTES and
// fewer than MAX_PENDING_NOTIFICATIONS frames unsent, and one past either bound ends the
// subscription with watch/overflow. Lower bounds given to the feed apply the same way (the
// end-to-end overflow test in test/e2e/watch.test.ts runs the server with them, to move less data).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { NotificationSink } from '../../src/server/feed-limits.js';
import { Subscriptions } from '../../src/server/subscriptions.js';
import { CATCH_UP_DRAINED_BYTES, CATCH_UP_PAGE_BYTES, CATCH_UP_PAGE_ENTRIES, MAX_CATCH_UP_READS, MAX_PENDING_BYTES, MAX_PENDING_BYTES_IN_TOTAL, MAX_PENDING_BYTES_WHEN_CROWDED, MAX_PENDING_NOTIFICATIONS } from '../../src/server/feed-limits.js';
import { REPO } from '../helpers/cli.js';

const entry = { ts: '2024-01-01T00:00:00Z', role: 'user', text: 'hi' };

/** A connection holding `bytes` and `frames` unsent, and the methods it was sent. */
function sink(bytes: number, frames: number): NotificationSink & { methods: string[] } {
  const methods: string[] = [];
  return { methods, notify: (method) => void methods.push(method), unsentBytes: () => bytes, unsentFrames: () => frames, isClosed: false };
}

/** What a connection holding `bytes` and `frames` unsent is sent for one append. */
function sentFor(feed: Subscriptions, bytes: number, frames: number): string[] {
  const s = sink(bytes, frames);
  feed.add(s, { transcripts: '*' });
  feed.transcriptAppended('a', 1, entry);
  return s.methods;
}

test(`by default a connection may hold ${MAX_PENDING_BYTES} bytes and ${MAX_PENDING_NOTIFICATIONS - 1} frames unsent; one byte or frame more overflows it`, () => {
  const feed = new Subscriptions();
  assert.deepEqual(sentFor(feed, MAX_PENDING_BYTES, MAX_PENDING_NOTIFICATIONS - 1), ['transcript/didAppend']);
  assert.deepEqual(sentFor(new Subscriptions(), MAX_PENDING_BYTES + 1, 1), ['watch/overflow']);
  assert.deepEqual(sentFor(new Subscriptions(), 0, MAX_PENDING_NOTIFICATIONS), ['watch/overflow']);
});

test('bounds given to the feed replace the defaults', () => {
  const limits = { pendingBytes: 1000, pendingNotifications: 10 };
  assert.deepEqual(sentFor(new Subscriptions(limits), 1000, 9), ['transcript/didAppend']);
  assert.deepEqual(sentFor(new Subscriptions(limits), 1001, 1), ['watch/overflow']);
  assert.deepEqual(sentFor(new Subscriptions(limits), 0, 10), ['watch/overflow']);
});

test("the feed's bounds are the ones docs/limits.md promises", () => {
  const limits = readFileSync(path.join(REPO, 'docs/limits.md'), 'utf8');
  const promised: [string, number, number][] = [
    ['128 MiB (134 217 728 bytes) of encoded output unsent on the subscribed connections together; past it, a connection may hold at most 1 MiB', MAX_PENDING_BYTES_IN_TOTAL, 128 * 2 ** 20],
    ['past it, a connection may hold at most 1 MiB', MAX_PENDING_BYTES_WHEN_CROWDED, 2 ** 20],
    [`at most ${CATCH_UP_PAGE_ENTRIES} entries and 256 KiB of lines a page`, CATCH_UP_PAGE_BYTES, 256 * 2 ** 10],
    ['the next page only once the connection holds at most 64 KiB unsent', CATCH_UP_DRAINED_BYTES, 64 * 2 ** 10],
    ['at most 4 pages being read at once', MAX_CATCH_UP_READS, 4],
  ];
  for (const [words, constant, value] of promised) {
    assert.ok(limits.includes(words), `docs/limits.md says: ${words}`);
    assert.equal(constant, value, words);
  }
});
