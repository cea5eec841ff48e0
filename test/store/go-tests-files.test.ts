// The Go package's journal and transcript tests (its cases 6-8 and 36-42, in its order) as
// store API calls. Ours refuses appends for a name without a session row, so each test adds one.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { Entry } from '../../src/store/transcript-read.js';
import type { Durability } from '../../src/store/state-store.js';
import type { Store } from '../../src/store/store.js';
import { newSession, openIn, reopen, text } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

async function withSession(t: { after(fn: () => Promise<void>): void }, name: string, durability?: Durability): Promise<{ dir: string; store: Store }> {
  const dir = tempDir();
  const store = await openIn(dir, durability ? { durability } : {});
  t.after(() => store.close());
  await store.addSession(newSession(name));
  return { dir, store };
}

const entry = (ts: string, role: string, text: string, extra: Partial<Entry> = {}): Entry => ({ ts, role, text, ...extra });

// ---- journal_test.go ---------------------------------------------------------------------

test('TestParticipantJournalAppendAndRead: the first append of an id adds it, the second does not, reads keep first-seen order', async (t) => {
  const { dir, store } = await withSession(t, 'a');
  assert.equal(existsSync(path.join(dir, 'participants')), false, 'the folder does not exist before the first append');
  assert.equal(await store.appendParticipant('a', 'u1'), true);
  assert.equal(await store.appendParticipant('a', 'u1'), false);
  assert.equal(await store.appendParticipant('a', 'u2'), true);
  assert.deepEqual(await store.readParticipants('a'), ['u1', 'u2']);
  assert.equal(text(path.join(dir, 'participants', 'a.log')), 'u1\nu2\n');
});

test('TestReadParticipantsMissingFileIsEmpty: reading a journal that does not exist gives no ids', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  assert.deepEqual(await store.readParticipants('a'), []);
  assert.equal(existsSync(path.join(dir, 'participants')), false);
});

test('TestRemoveParticipantJournal: removing a journal empties it, and removing it again is not an error', async (t) => {
  const { dir, store } = await withSession(t, 'a');
  await store.appendParticipant('a', 'u1');
  assert.equal(await store.removeParticipants('a'), true);
  assert.equal(existsSync(path.join(dir, 'participants', 'a.log')), false);
  assert.deepEqual(await store.readParticipants('a'), []);
  assert.equal(await store.removeParticipants('a'), false);
});

// ---- transcript_test.go ------------------------------------------------------------------

test('TestTranscriptEntryPersistsUsage: an entry\'s cost, tokens and duration are written as Go writes them and read back', async (t) => {
  const { dir, store } = await withSession(t, 's');
  const e = entry('2026-07-26T00:00:00Z', 'assistant', 'ok', {
    cost: 0.004, tokens_in: 30, tokens_out: 55, cache_read: 12, cache_create: 3, dur_ms: 4200,
  });
  await store.appendTranscript('s', e);
  assert.equal(
    text(path.join(dir, 'transcripts', 's.jsonl')),
    '{"ts":"2026-07-26T00:00:00Z","role":"assistant","text":"ok","cost":0.004,"tokens_in":30,"tokens_out":55,"cache_read":12,"cache_create":3,"dur_ms":4200}\n',
  );
  const got = await store.readTranscript('s', -1);
  assert.equal(got.length, 1);
  assert.equal(got[0]?.tokens_out, 55);
  assert.equal(got[0]?.cache_read, 12);
  assert.equal(got[0]?.dur_ms, 4200);
  assert.deepEqual(got, [e]);
});

test('TestTranscriptAppendReadCap: read(0) gives every entry in order, read(2) the last two, in transcripts/<name>.jsonl', async (t) => {
  const { dir, store } = await withSession(t, 'sess');
  const roles = ['user', 'assistant', 'user', 'assistant'];
  for (const [i, text] of ['a', 'b', 'c', 'd'].entries()) await store.appendTranscript('sess', entry(`t${i}`, roles[i] as string, text));
  const all = await store.readTranscript('sess', 0);
  assert.equal(all.length, 4);
  assert.equal(all[0]?.role, 'user');
  assert.equal(all[3]?.role, 'assistant');
  assert.deepEqual((await store.readTranscript('sess', 2)).map((e) => e.text), ['c', 'd']);
  assert.deepEqual(readdirSync(path.join(dir, 'transcripts')), ['sess.jsonl']);
});

test('TestReadTranscriptLast: last is "" without a file, then the newest ts, also past the 64 KiB tail window', async (t) => {
  const { dir, store } = await withSession(t, 's');
  assert.equal(await store.lastTranscriptTs('s'), '');
  for (const ts of ['t1', 't2', 't3']) await store.appendTranscript('s', entry(ts, 'user', 'x'));
  assert.equal(await store.lastTranscriptTs('s'), 't3');
  for (let i = 0; i < 40; i++) await store.appendTranscript('s', entry('t3', 'user', 'x'.repeat(4096)));
  await store.appendTranscript('s', entry('tLAST', 'user', 'final'));
  assert.ok(statSync(path.join(dir, 'transcripts', 's.jsonl')).size > 64 * 1024);
  assert.equal(await store.lastTranscriptTs('s'), 'tLAST');
  const cold = await reopen(store);
  t.after(() => cold.close());
  assert.equal(await cold.lastTranscriptTs('s'), 'tLAST', 'read from the file by a store that did not write it');
});

test('TestReadTranscriptHandlesHugeLine: a 2 MiB line is read whole', async (t) => {
  const { store } = await withSession(t, 's');
  await store.appendTranscript('s', entry('t1', 'user', 'hi'));
  await store.appendTranscript('s', entry('t2', 'user', 'z'.repeat(2 * 1024 * 1024)));
  const all = await store.readTranscript('s', 0);
  assert.equal(all.length, 2);
  assert.equal(all[1]?.text.length, 2_097_152);
  const last = await store.readTranscript('s', 1);
  assert.equal(last[0]?.ts, 't2');
  assert.equal(last[0]?.text.length, 2_097_152);
});

test('TestTranscriptCompactionBoundsGrowth: 1000 appends of 5000 bytes leave t0417..t0999, 2 937 737 bytes, as Go', async (t) => {
  // The bytes Go leaves do not depend on syncing: `write` spares 1 000 log records and fdatasyncs.
  const { dir, store } = await withSession(t, 's', 'write');
  for (let i = 0; i < 1000; i++) {
    await store.appendTranscript('s', entry(`t${String(i).padStart(4, '0')}`, 'user', 'm'.repeat(5000)));
  }
  const file = path.join(dir, 'transcripts', 's.jsonl');
  assert.equal(statSync(file).size, 2_937_737);
  const all = await store.readTranscript('s', 0);
  assert.equal(all.length, 583);
  assert.equal(all[0]?.ts, 't0417');
  assert.equal(all.at(-1)?.ts, 't0999');
  assert.equal(await store.lastTranscriptTs('s'), 't0999');
  assert.deepEqual(readdirSync(path.join(dir, 'transcripts')), ['s.jsonl'], 'no temp file left behind');
});

test('TestReadTranscriptLastFallsBackPastTailWindow: a last line longer than 64 KiB still gives its ts', async (t) => {
  const { store } = await withSession(t, 's');
  await store.appendTranscript('s', entry('t1', 'user', 'hi'));
  await store.appendTranscript('s', entry('tHUGE', 'user', 'y'.repeat(128 * 1024)));
  assert.equal(await store.lastTranscriptTs('s'), 'tHUGE');
  const cold = await reopen(store);
  t.after(() => cold.close());
  assert.equal(await cold.lastTranscriptTs('s'), 'tHUGE');
});

test('TestTranscriptReadMissingAndRemove: a missing transcript reads as no entries and removing it is not an error', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  assert.deepEqual(await store.readTranscript('s', 0), []);
  assert.equal(await store.lastTranscriptTs('s'), '');
  assert.equal(await store.removeTranscript('s'), false);
  assert.equal(existsSync(path.join(dir, 'transcripts')), false);
});
