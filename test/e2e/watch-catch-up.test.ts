// watch/subscribe with `since` on a long transcript: what the subscriber missed is read from the
// file a page at a time, the next page only once the connection has taken the last, so a reader
// that stops reading holds one page, not the transcript; a connection that closes, or a stop of
// the server, ends the catch-up at its next step. Ordered by the feed's observer (which tells when
// a catch-up waits for its connection and when it is over), never by time.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { CatchUpObserver } from '../../src/server/feed-limits.js';
import { CATCH_UP_PAGE_ENTRIES } from '../../src/server/feed-limits.js';
import { entry, TIMEOUT, transcriptFile } from '../helpers/feed.js';
import { startServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-dir.js';
import type { Message } from '../helpers/wire.js';

/** Entries in the transcript caught up: ~3 MB, twenty pages, many times what the socket buffers hold. */
const N = 5000;
const TEXT = 'x'.repeat(600);

/** A state dir whose transcript `a` holds N entries (written as the file, before the server starts). */
function dirWithTranscript(): string {
  const dir = tempDir();
  const file = transcriptFile(dir, 'a');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, Array.from({ length: N }, (_, i) => `${JSON.stringify(entry(`${i}:${TEXT}`))}\n`).join(''));
  return dir;
}

/** The feed's observer, with a promise for the first event of each kind. */
function observed(): CatchUpObserver & { firstWait: Promise<void>; firstEnd: Promise<void> } {
  let waited!: () => void;
  let ended!: () => void;
  const firstWait = new Promise<void>((resolve) => (waited = resolve));
  const firstEnd = new Promise<void>((resolve) => (ended = resolve));
  return { firstWait, firstEnd, waiting: () => waited(), ended: () => ended() };
}

const seqs = (received: Message[]): number[] =>
  received.filter((m) => m.method === 'transcript/didAppend').map((m) => (m.params as { seq: number }).seq);

test('a catch-up to a connection that stops reading holds one page; once it reads, every entry comes once, in order, then the live ones', { timeout: TIMEOUT }, async (t) => {
  const observer = observed();
  const server = await startServer(t, { dir: dirWithTranscript(), feed: { observer } });
  const feed = server.server.subscriptions;
  const writer = await server.client();
  await writer.sessionAdd({ session: { name: 'a' } });
  const reader = await server.raw('ndjson');
  reader.socket.pause();
  reader.send('watch/subscribe', { transcripts: ['a'], since: { transcripts: { a: -1 } } });
  await observer.firstWait;
  // Stalled: the file is read a page at a time, and no further than the socket could take.
  assert.ok(feed.catchUp.entriesInMemoryPeak <= CATCH_UP_PAGE_ENTRIES, `at most one page in memory, got ${feed.catchUp.entriesInMemoryPeak}`);
  assert.ok(feed.catchUp.pages * CATCH_UP_PAGE_ENTRIES < N, `read ${feed.catchUp.pages} pages of ${N / CATCH_UP_PAGE_ENTRIES} while the reader was stalled`);
  // Appended while the subscriber catches up: sent after the file's entries, each once.
  for (let i = 0; i < 5; i++) assert.equal((await writer.transcriptAppend({ name: 'a', entry: entry(`live${i}`) })).seq, N + i);
  reader.socket.resume();
  await reader.waitFor((m) => m.method === 'transcript/didAppend' && (m.params as { seq: number }).seq === N + 4);
  await observer.firstEnd;
  assert.deepEqual(seqs(reader.received), Array.from({ length: N + 5 }, (_, i) => i));
  assert.equal(feed.catchUp.entriesInMemory, 0);
  assert.ok(feed.catchUp.entriesInMemoryPeak <= CATCH_UP_PAGE_ENTRIES);
  // Live from now on.
  await writer.transcriptAppend({ name: 'a', entry: entry('after') });
  await reader.waitFor((m) => m.method === 'transcript/didAppend' && (m.params as { seq: number }).seq === N + 5);
});

test('a connection that closes during its catch-up ends it: no page is read after, nothing is left in memory', { timeout: TIMEOUT }, async (t) => {
  const observer = observed();
  const server = await startServer(t, { dir: dirWithTranscript(), feed: { observer } });
  const feed = server.server.subscriptions;
  const reader = await server.raw('ndjson');
  reader.socket.pause();
  reader.send('watch/subscribe', { transcripts: ['a'], since: { transcripts: { a: -1 } } });
  await observer.firstWait;
  const pages = feed.catchUp.pages;
  reader.socket.destroy();
  await observer.firstEnd;
  assert.equal(feed.catchUp.pages, pages, 'no page read once the connection closed');
  assert.deepEqual({ running: feed.catchUp.running, entriesInMemory: feed.catchUp.entriesInMemory }, { running: 0, entriesInMemory: 0 });
});

test('the stop of a server with catch-ups stalled on readers that never read ends them and stops in order', { timeout: TIMEOUT }, async (t) => {
  const observer = observed();
  const server = await startServer(t, { dir: dirWithTranscript(), feed: { observer } });
  const feed = server.server.subscriptions;
  for (let c = 0; c < 4; c++) {
    const reader = await server.raw('ndjson');
    reader.socket.pause();
    for (let i = 0; i < 8; i++) reader.send('watch/subscribe', { transcripts: ['a'], since: { transcripts: { a: -1 } } });
  }
  await observer.firstWait;
  assert.ok(feed.catchUp.running > 0);
  await server.close();
  const msgs = server.logs.map((l) => l.msg);
  const order = ['stopping', 'stop: every catch-up of a returning subscriber is over', 'stop: every accepted write finished, the lock released', 'stopped'];
  assert.deepEqual(msgs.filter((m) => order.includes(m as string)), order, msgs.join('\n'));
  assert.deepEqual(server.logs.filter((l) => l.level >= 50), [], 'nothing logged at error');
  assert.equal(feed.catchUp.running, 0, 'every catch-up is over once the server has stopped');
  assert.ok(feed.catchUp.entriesInMemoryPeak <= 4 * CATCH_UP_PAGE_ENTRIES, `at most a page per connection, got ${feed.catchUp.entriesInMemoryPeak}`);
});
