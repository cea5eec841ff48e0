// Hostile files: a big transcript or participants journal never blocks the event loop for long. Its first read (the
// snapshot scan) and its compaction used to read the whole file in one piece and parse it in
// one synchronous run (200 MB: others stalled 2.7-7 s). Now both stream it in SCAN_CHUNK reads,
// each followed by that chunk's parse only, so the loop turns at least once per chunk. Checked
// without a clock: through the io seam, no read of the transcript delivers more than a chunk,
// none reads it whole, and another request is answered while the scan is still reading.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo, withIo } from '../../src/store/io.js';
import { SCAN_CHUNK } from '../../src/store/line-scan.js';
import { COMPACT_TRIGGER_BYTES } from '../../src/store/transcript-compact.js';
import type { Store } from '../../src/store/store.js';
import { openIn } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

/**
 * A state dir with sessions "big" and "other" and a transcript of `entries` lines of ~`textBytes`
 * characters of text each for "big". The bytes are what the tests are about (chunks, the
 * trigger), not the lines: ~1 KB lines, a fifth as many as of ~200 bytes, halve the file's CPU.
 */
function bigTranscript(entries: number, textBytes = 1000): { dir: string; bytes: number } {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), JSON.stringify({ sessions: [
    { name: 'big', incarnation: `inc_${'A'.repeat(26)}` }, { name: 'other', incarnation: `inc_${'B'.repeat(26)}` },
  ] }));
  mkdirSync(path.join(dir, 'transcripts'));
  const lines: string[] = [];
  for (let i = 0; i < entries; i++) lines.push(JSON.stringify({ ts: `t${i}`, role: 'user', text: `${i} ${'x'.repeat(textBytes)}`, cost: 0.5 }));
  const text = `${lines.join('\n')}\n`;
  writeFileSync(path.join(dir, 'transcripts', 'big.jsonl'), text);
  return { dir, bytes: Buffer.byteLength(text) };
}

/** An Io that records the bytes each read of the big transcript delivered, and any whole-file read of it. */
function watchedIo(suffix = 'big.jsonl'): { io: ReturnType<typeof withIo>; reads: number[]; wholeReads: string[]; onRead(fn: (n: number) => Promise<void> | void): void } {
  const handles = new WeakSet<FileHandle>();
  const reads: number[] = [];
  const wholeReads: string[] = [];
  let hook: (n: number) => Promise<void> | void = () => undefined;
  const io = withIo({
    async open(file, flags, mode) {
      const fh = await nodeIo.open(file, flags, mode);
      if (file.endsWith(suffix)) handles.add(fh);
      return fh;
    },
    async read(fh, buf, position) {
      const n = await nodeIo.read(fh, buf, position);
      if (handles.has(fh)) {
        reads.push(n);
        await hook(reads.length);
      }
      return n;
    },
    async readFile(file) {
      if (file.endsWith(suffix)) wholeReads.push(file);
      return nodeIo.readFile(file);
    },
  });
  return { io, reads, wholeReads, onRead: (fn) => { hook = fn; } };
}

/**
 * Holds the scan's third read until another request has been answered: with a streamed scan it
 * is, while the big file is still being read; a one-piece read never gets there.
 */
function answerAnotherDuringTheScan(w: ReturnType<typeof watchedIo>, store: Store): { answered: boolean } {
  const other = { answered: false };
  w.onRead(async (n) => {
    if (n === 2) {
      await store.readParticipants('other');
      other.answered = true;
    }
  });
  return other;
}

test('the first read of a big transcript streams it: no read hands the parser more than a chunk, and others are answered meanwhile', async (t) => {
  const { dir, bytes } = bigTranscript(3_000); // ~3 MB: three chunks at least
  const w = watchedIo();
  const store = await openIn(dir, { io: w.io });
  t.after(() => store.close());
  const other = answerAnotherDuringTheScan(w, store);
  const usage = await store.transcriptUsage('big');
  assert.equal(usage.entries, 3_000);
  assert.equal(usage.cost, 1_500);
  assert.equal(other.answered, true, 'another request was answered while the big file was scanned');
  assert.ok(w.reads.length >= Math.floor(bytes / SCAN_CHUNK), `reads: ${w.reads.length}`);
  assert.ok(Math.max(...w.reads) <= SCAN_CHUNK, `largest read: ${Math.max(...w.reads)} bytes`);
  assert.deepEqual(w.wholeReads, []);
});

test('compaction of a big transcript streams it too and keeps what Go keeps', async (t) => {
  const { dir, bytes } = bigTranscript(4_200); // ~4.4 MB: past the compaction trigger
  assert.ok(bytes > COMPACT_TRIGGER_BYTES);
  const w = watchedIo();
  const store = await openIn(dir, { io: w.io });
  t.after(() => store.close());
  const before = await store.transcriptUsage('big');
  const seq = await store.appendTranscript('big', { ts: 'last', role: 'user', text: 'y' }); // past the trigger: compacts
  assert.equal(seq, 4_200);
  assert.deepEqual(w.wholeReads, [], 'compaction read the file in one piece');
  assert.ok(Math.max(...w.reads) <= SCAN_CHUNK, `largest read: ${Math.max(...w.reads)} bytes`);
  const page = await store.readTranscriptPage('big', {});
  assert.ok(page.firstSeq > 0, 'compaction ran');
  assert.equal(page.entries.at(-1)?.ts, 'last');
  assert.equal(page.firstSeq + page.entries.length, 4_201);
  const after = await store.transcriptUsage('big');
  assert.equal(after.entries, before.entries + 1);
  assert.equal(after.cost, before.cost);
});

test('the first read of a big participants journal streams it too: first-seen order, trimmed, the unterminated tail dropped', async (t) => {
  const { dir } = bigTranscript(1);
  mkdirSync(path.join(dir, 'participants'));
  const ids = Array.from({ length: 40_000 }, (_, i) => `user-${i}-${'p'.repeat(60)}`);
  const text = `${ids.map((id, i) => (i % 7 === 0 ? `  ${id}\t` : id)).join('\n')}\n${ids[0]}\n\ntorn-tail-never-acknowledged`;
  writeFileSync(path.join(dir, 'participants', 'big.log'), text);
  assert.ok(Buffer.byteLength(text) > 2 * SCAN_CHUNK);
  const w = watchedIo('big.log');
  const store = await openIn(dir, { io: w.io });
  t.after(() => store.close());
  const other = answerAnotherDuringTheScan(w, store);
  assert.deepEqual(await store.readParticipants('big'), ids);
  assert.equal(other.answered, true, 'another request was answered while the journal was read');
  assert.ok(Math.max(...w.reads) <= SCAN_CHUNK, `largest read: ${Math.max(...w.reads)} bytes`);
  assert.deepEqual(w.wholeReads, []);
});
