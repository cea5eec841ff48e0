// The change feed's bound over all connections together ("per connection and in
// total"): stalled subscribers each within their own 16 MiB could together hold N × 16 MiB. Once
// the subscribed connections hold more than the total bound, each one holding more than 1 MiB
// unsent is overflowed; a prompt reader (nothing unsent) keeps getting its notifications.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NotificationSink } from '../../src/server/feed-limits.js';
import { Subscriptions } from '../../src/server/subscriptions.js';
import { MAX_PENDING_BYTES, MAX_PENDING_BYTES_WHEN_CROWDED } from '../../src/server/feed-limits.js';

const MiB = 1024 * 1024;
const entry = { ts: '2024-01-01T00:00:00Z', role: 'user', text: 'hi' };

/** A connection as the feed sees it: how much it holds unsent, and what it was sent. */
function sink(unsent: number): NotificationSink & { methods: string[] } {
  const methods: string[] = [];
  return { methods, notify: (method) => void methods.push(method), unsentBytes: () => unsent, unsentFrames: () => 1, isClosed: false };
}

test('past the total bound, connections holding more than 1 MiB unsent overflow; one with nothing unsent is still served', () => {
  const feed = new Subscriptions({ pendingBytesInTotal: 10 * MiB });
  const stalledA = sink(6 * MiB);
  const stalledB = sink(6 * MiB);
  const prompt = sink(0);
  for (const s of [stalledA, stalledB, prompt]) feed.add(s, { transcripts: '*' });
  feed.transcriptAppended('a', 1, entry);
  assert.deepEqual(stalledA.methods, ['watch/overflow']);
  assert.deepEqual(stalledB.methods, ['watch/overflow']);
  assert.deepEqual(prompt.methods, ['transcript/didAppend']);
  assert.equal(feed.size, 1, 'only the prompt reader keeps its subscription');
  feed.transcriptAppended('a', 2, entry);
  assert.deepEqual(prompt.methods, ['transcript/didAppend', 'transcript/didAppend']);
});

test('below the total bound, each connection has its own 16 MiB: a connection holding 6 MiB is not overflowed', () => {
  assert.ok(6 * MiB < MAX_PENDING_BYTES && 6 * MiB > MAX_PENDING_BYTES_WHEN_CROWDED);
  const feed = new Subscriptions({ pendingBytesInTotal: 20 * MiB });
  const a = sink(6 * MiB);
  const b = sink(6 * MiB);
  feed.add(a, { transcripts: '*' });
  feed.add(b, { sessions: true, participants: '*' });
  feed.transcriptAppended('a', 1, entry);
  feed.participantAdded('a', 'u1');
  assert.deepEqual(a.methods, ['transcript/didAppend']);
  assert.deepEqual(b.methods, ['participants/didAdd']);
  assert.equal(feed.size, 2);
});
