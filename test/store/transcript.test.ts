// Transcripts beyond the Go suite: the probes' tolerant-read and ReadTranscriptLast cases, the
// compaction boundaries, and what we fix (NaN, the cache).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { encodeTranscriptLine } from '../../src/store/go-json.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Store } from '../../src/store/store.js';
import { COMPACT_KEEP_BYTES, COMPACT_TRIGGER_BYTES } from '../../src/store/transcript-compact.js';
import type { Entry } from '../../src/store/transcript-read.js';
import type { StoreOptions } from '../../src/store/store.js';
import { newSession, openIn, reopen, storeError, text } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const entry = (ts: string, text = 'x', extra: Partial<Entry> = {}): Entry => ({ ts, role: 'user', text, ...extra });
const line = (e: Entry): string => encodeTranscriptLine(e);

/** A store whose transcript for `s` holds exactly `content` (written as another process would). */
async function withTranscript(t: { after(fn: () => Promise<void>): void }, content: string | Buffer, options: StoreOptions = {}): Promise<{ file: string; store: Store }> {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'transcripts'));
  const file = path.join(dir, 'transcripts', 's.jsonl');
  writeFileSync(file, content);
  const store = await openIn(dir, options);
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  return { file, store };
}

/** Every read(k) must be the last k of read(0): the backwards reader agrees with the full one. */
async function assertLimitsAgree(store: Store): Promise<void> {
  const all = await store.readTranscript('s', 0);
  for (let k = 1; k <= all.length + 1; k++) assert.deepEqual(await store.readTranscript('s', k), all.slice(-k), `read(${k})`);
}

// ---- tolerant reading (observed Go results) ------------------------------------------------

test('reading keeps what Go keeps: null as an all-zero entry, {"TS":..}, a CRLF line, a duplicate key (last wins)', async (t) => {
  const { store } = await withTranscript(t, [
    'null',
    '{"TS":"upper","Role":"user","TEXT":"a"}',
    '{"ts":"crlf","role":"user","text":"b"}\r',
    '{"ts":"first","ts":"dup","role":"user","text":"c"}',
    '',
  ].join('\n'));
  assert.deepEqual(await store.readTranscript('s', 0), [
    { ts: '', role: '', text: '' },
    { ts: 'upper', role: 'user', text: 'a' },
    { ts: 'crlf', role: 'user', text: 'b' },
    { ts: 'dup', role: 'user', text: 'c' },
  ]);
  await assertLimitsAgree(store);
});

test('reading skips what Go skips: [1], "s", {"ts":5}, tokens_in 1.0, trailing garbage, a BOM line, blanks, an unterminated partial last line', async (t) => {
  const { store } = await withTranscript(t, [
    '{"ts":"t1","role":"user","text":"a"}',
    '[1]',
    '"s"',
    '{"ts":5,"role":"user","text":"b"}',
    '{"ts":"t2","role":"user","text":"c","tokens_in":1.0}',
    '{"ts":"t3","role":"user","text":"d"} x',
    '\ufeff{"ts":"t4","role":"user","text":"e"}',
    '   ',
    '',
    '{"ts":"t5","role":"user","text":"f"}',
    '{"ts":"t6","role":"us',
  ].join('\n'));
  assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1', 't5']);
  await assertLimitsAgree(store);
});

test('an unterminated last line that parses is read, as Go reads it', async (t) => {
  const { store } = await withTranscript(t, `${line(entry('t1'))}{"ts":"t2","role":"user","text":"y"}`);
  assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1', 't2']);
  assert.equal(await store.lastTranscriptTs('s'), 't2');
});

test('lines are trimmed as Go\'s TrimSpace: leading spaces, tabs and NEL around a line are ignored', async (t) => {
  const { store } = await withTranscript(t, ` \t${line(entry('t1')).trimEnd()}\u0085\n`);
  assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1']);
});

// ---- last ------------------------------------------------------------------------------------

const lastCases: [string, string, string][] = [
  ['a partial last line gives the previous good ts', `${line(entry('good'))}{"ts":"torn","ro`, 'good'],
  ['a last line of null gives ""', `${line(entry('t1'))}null\n`, ''],
  ['a file of blank lines gives ""', '\n  \n\t\n\n', ''],
  ['an empty file gives ""', '', ''],
  ['unparsable lines after the last entry are skipped back over', `${line(entry('t1'))}${line(entry('t2'))}garbage\n[1]\n\n`, 't2'],
];

for (const [what, content, want] of lastCases) {
  test(`lastTranscriptTs: ${what}, as Go's ReadTranscriptLast`, async (t) => {
    const { store } = await withTranscript(t, content);
    assert.equal(await store.lastTranscriptTs('s'), want);
    const all = await store.readTranscript('s', 0);
    assert.equal(all.at(-1)?.ts ?? '', want, 'the ts of the last entry a full read returns');
  });
}

test('lastTranscriptTs follows appends and a removal without rereading the file', async (t) => {
  const { store } = await withTranscript(t, line(entry('t1')));
  assert.equal(await store.lastTranscriptTs('s'), 't1');
  await store.appendTranscript('s', entry('t2'));
  assert.equal(await store.lastTranscriptTs('s'), 't2');
  assert.equal(await store.removeTranscript('s'), true);
  assert.equal(await store.lastTranscriptTs('s'), '');
});

test('an append that completes while lastTranscriptTs is reading the file is not hidden by the stale read', async (t) => {
  const dir = tempDir();
  let gate: Promise<void> | undefined;
  let reached: () => void = () => undefined;
  let release: () => void = () => undefined;
  const io = withIo({
    async size(fh) {
      const n = await nodeIo.size(fh);
      const g = gate;
      gate = undefined; // only the first size call after arming waits
      if (g) {
        reached();
        await g;
      }
      return n;
    },
  });
  const first = await openIn(dir);
  await first.addSession(newSession('s'));
  await first.appendTranscript('s', entry('t1'));
  const store = await reopen(first, { io });
  t.after(() => store.close());
  const atGate = new Promise<void>((resolve) => { reached = resolve; });
  gate = new Promise<void>((resolve) => { release = resolve; });
  const reading = store.lastTranscriptTs('s');
  await atGate;
  // The first append after opening waits for the transcript's one-time scan, which is held at the gate.
  const appending = store.appendTranscript('s', entry('t2'));
  release();
  assert.equal(await appending, 1, 'the append got the next seq');
  assert.equal(await reading, 't1', 'the read began before the append');
  assert.equal(await store.lastTranscriptTs('s'), 't2');
});

// ---- compaction boundaries -----------------------------------------------------------------

/** An entry whose line is exactly `bytes` long. */
function entryOfLineSize(ts: string, bytes: number): Entry {
  const overhead = line(entry(ts, '')).length;
  return entry(ts, 'a'.repeat(bytes - overhead));
}

test('a transcript of exactly 4 194 304 bytes is not compacted; one byte more is', async (t) => {
  const { file, store } = await withTranscript(t, '');
  const half = COMPACT_TRIGGER_BYTES / 2;
  await store.appendTranscript('s', entryOfLineSize('t1', half));
  await store.appendTranscript('s', entryOfLineSize('t2', half));
  assert.equal(statSync(file).size, 4_194_304);
  assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1', 't2']);
  const small = entry('t3');
  await store.appendTranscript('s', small);
  assert.equal(text(file), line(small), 't2 (2 MiB) plus t3 is over the 2 MiB kept: only the newest stays');
});

test('compaction keeps the newest entries whose lines fit in 2 097 152 bytes, boundary included', async (t) => {
  const { file, store } = await withTranscript(t, '');
  const a = entryOfLineSize('a', COMPACT_TRIGGER_BYTES - COMPACT_KEEP_BYTES + 1);
  const b = entryOfLineSize('b', COMPACT_KEEP_BYTES - 100);
  const c = entryOfLineSize('c', 100);
  await store.appendTranscript('s', a);
  await store.appendTranscript('s', b);
  await store.appendTranscript('s', c);
  assert.equal(statSync(file).size, COMPACT_KEEP_BYTES, 'b and c fill the 2 MiB kept exactly');
  assert.equal(text(file), line(b) + line(c));
});

test('a single entry of 4 MiB or more compacts to just itself, dropping older and malformed lines', async (t) => {
  const { file, store } = await withTranscript(t, `${line(entry('old'))}garbage\n{"ts":5}\n`);
  const huge = entry('huge', 'h'.repeat(COMPACT_TRIGGER_BYTES));
  await store.appendTranscript('s', huge);
  assert.equal(text(file), line(huge));
  assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['huge']);
  assert.deepEqual(readdirSync(path.dirname(file)), ['s.jsonl']);
});

test('compaction re-encodes kept entries as Go: case-folded keys and unknown fields are normalised', async (t) => {
  const old = '{"TS":"old","Role":"user","TEXT":"x","mood":"ok"}\n';
  const filler = line(entryOfLineSize('filler', COMPACT_TRIGGER_BYTES - old.length));
  const { file, store } = await withTranscript(t, filler + old);
  assert.equal(statSync(file).size, COMPACT_TRIGGER_BYTES);
  await store.appendTranscript('s', entry('new'));
  assert.equal(text(file), `{"ts":"old","role":"user","text":"x"}\n${line(entry('new'))}`);
});

// ---- refused entries -------------------------------------------------------------------------

test('an entry with a NaN cost is refused as invalid-input and creates no file (Go creates an empty one; fixed)', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  await assert.rejects(() => store.appendTranscript('s', entry('t1', 'x', { cost: Number.NaN })), storeError('invalid-input', ['entry.cost', 'NaN']));
  await assert.rejects(() => store.appendTranscript('s', entry('t1', 'x', { cost: Number.NEGATIVE_INFINITY })), storeError('invalid-input', ['-Infinity']));
  await assert.rejects(() => store.appendTranscript('s', entry('t1', 'x', { tokens_in: 1.5 })), storeError('invalid-input', ['entry.tokens_in']));
  assert.equal(existsSync(path.join(dir, 'transcripts')), false);
  assert.equal(await store.lastTranscriptTs('s'), '');
});

// ---- removal -----------------------------------------------------------------------------------

test('removeSession with purge deletes the transcript and journal, and later appends are refused', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', entry('t1'));
  await store.appendParticipant('s', 'u1');
  assert.deepEqual(await store.removeSession('s', { purge: true }), { removed: true });
  assert.deepEqual(readdirSync(path.join(dir, 'transcripts')), []);
  assert.deepEqual(readdirSync(path.join(dir, 'participants')), []);
  await assert.rejects(() => store.appendTranscript('s', entry('t2')), storeError('unknown-session', ['no session named "s"']));
  await assert.rejects(() => store.appendParticipant('s', 'u2'), storeError('unknown-session'));
  assert.deepEqual(readdirSync(path.join(dir, 'transcripts')), []);
  assert.deepEqual(readdirSync(path.join(dir, 'participants')), []);
});

test('appends queued before a purge are written before the files go, none after', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  const appends = [1, 2, 3].map((i) => store.appendTranscript('s', entry(`t${i}`)));
  const removed = store.removeSession('s', { purge: true });
  await Promise.all(appends);
  assert.deepEqual(await removed, { removed: true });
  assert.equal(existsSync(path.join(dir, 'transcripts', 's.jsonl')), false);
  await store.addSession(newSession('s'));
  assert.deepEqual(await store.readTranscript('s', 0), [], 'a re-created session starts with no transcript');
});
