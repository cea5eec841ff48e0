// A file whose last byte is not "\n" (a crash mid-append) is repaired before the next append, so
// a new line never glues onto a torn one (Go's O_APPEND write would glue it and lose both).
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { encodeTranscriptLine } from '../../src/store/go-json.js';
import type { Store } from '../../src/store/store.js';
import { newSession, openIn, text } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const entry = (ts: string, text = 'x') => ({ ts, role: 'user', text });
const line = (ts: string, text = 'x'): string => encodeTranscriptLine(entry(ts, text));

/** A store with session `s` whose `rel` file holds `content`, written before the store opens. */
async function withFile(t: { after(fn: () => Promise<void>): void }, rel: string, content: string): Promise<{ file: string; store: Store }> {
  const dir = tempDir();
  const file = path.join(dir, rel);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, content);
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  return { file, store };
}

// ---- transcripts -----------------------------------------------------------------------------

test('a torn transcript tail that parses is kept and terminated, and the next entry gets its own line', async (t) => {
  const fragment = '{"ts":"t2","role":"user","text":"y"}';
  const { file, store } = await withFile(t, 'transcripts/s.jsonl', line('t1') + fragment);
  assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1', 't2'], 'Go reads the unterminated line');
  await store.appendTranscript('s', entry('t3'));
  assert.equal(text(file), `${line('t1')}${fragment}\n${line('t3')}`);
  assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1', 't2', 't3']);
  assert.deepEqual((await store.readTranscript('s', 2)).map((e) => e.ts), ['t2', 't3']);
  assert.equal(await store.lastTranscriptTs('s'), 't3');
});

test('a torn transcript tail that does not parse is dropped before the next append', async (t) => {
  const { file, store } = await withFile(t, 'transcripts/s.jsonl', `${line('t1')}{"ts":"t2","ro`);
  assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1'], 'Go skips the fragment');
  await store.appendTranscript('s', entry('t3'));
  assert.equal(text(file), line('t1') + line('t3'));
  assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1', 't3']);
  assert.equal(await store.lastTranscriptTs('s'), 't3');
});

test('a torn transcript tail longer than 64 KiB is found and dropped whole', async (t) => {
  const { file, store } = await withFile(t, 'transcripts/s.jsonl', `${line('t1')}{"ts":"t2","role":"user","text":"${'z'.repeat(100_000)}`);
  await store.appendTranscript('s', entry('t3'));
  assert.equal(text(file), line('t1') + line('t3'));
});

test('a transcript that is only a torn fragment is emptied (garbage) or terminated (an entry) before the append', async (t) => {
  const garbage = await withFile(t, 'transcripts/s.jsonl', 'garb');
  await garbage.store.appendTranscript('s', entry('t1'));
  assert.equal(text(garbage.file), line('t1'));
  const whole = await withFile(t, 'transcripts/s.jsonl', '{"ts":"t0","role":"user","text":"x"}');
  await whole.store.appendTranscript('s', entry('t1'));
  assert.equal(text(whole.file), `${line('t0')}${line('t1')}`);
});

test('trailing blanks after the last transcript line are a torn tail too, dropped before the append', async (t) => {
  const { file, store } = await withFile(t, 'transcripts/s.jsonl', `${line('t1')}  \t`);
  await store.appendTranscript('s', entry('t2'));
  assert.equal(text(file), line('t1') + line('t2'));
});

test('a transcript ending in "\\n" is appended to as it is', async (t) => {
  const { file, store } = await withFile(t, 'transcripts/s.jsonl', `${line('t1')}\n\n`);
  await store.appendTranscript('s', entry('t2'));
  assert.equal(text(file), `${line('t1')}\n\n${line('t2')}`);
});

// ---- journals ----------------------------------------------------------------------------------

test('a journal\'s unterminated last id (never acknowledged) is not a participant and is dropped before the next append', async (t) => {
  const { file, store } = await withFile(t, 'participants/s.log', 'u1\nu2');
  assert.deepEqual(await store.readParticipants('s'), ['u1']);
  assert.equal(await store.appendParticipant('s', 'u3'), true);
  assert.equal(text(file), 'u1\nu3\n');
  assert.equal(await store.appendParticipant('s', 'u2'), true, 'the torn id was never recorded');
  assert.equal(text(file), 'u1\nu3\nu2\n');
  assert.deepEqual(await store.readParticipants('s'), ['u1', 'u3', 'u2']);
});

test('a journal that is only a torn id is emptied before the next append', async (t) => {
  const { file, store } = await withFile(t, 'participants/s.log', 'u1');
  assert.equal(await store.appendParticipant('s', 'u1'), true);
  assert.equal(text(file), 'u1\n');
});
