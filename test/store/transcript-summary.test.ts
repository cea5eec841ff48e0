// Restart in O(sessions): appends keep each transcript's summary (count, usage, newest ts, and the
// inode, size and first bytes of the file it describes), written inside the append that passes
// SUMMARY_EVERY_BYTES since the last one (never by close), and the next start answers
// usage/last/infos from it, reading the file's first bytes to check it is the same file and only
// the bytes past the summary's end (appended since, by us or by Go). Anything that makes the
// summary stale (a cut, another inode, a damaged or missing summary) is caught, and a scan gives
// the right numbers.
import assert from 'node:assert/strict';
import { appendFileSync, copyFileSync, existsSync, readFileSync, renameSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Store } from '../../src/store/store.js';
import { HEAD_BYTES } from '../../src/store/transcript-meta.js';
import { COMPACT_TRIGGER_BYTES } from '../../src/store/transcript-compact.js';
import { SUMMARY_EVERY_BYTES } from '../../src/store/transcript.js';
import { newSession, openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { sealLine } from '../../src/store/sealed-line.js';

/** ~300 KB of entries: several times SUMMARY_EVERY_BYTES, so reading the tail past a summary is far from reading the file. */
const ENTRIES = 1200;

/** An Io that counts the bytes read from the transcript of "s" (handle reads and whole-file reads). */
function watchedIo(): { io: ReturnType<typeof withIo>; read: { bytes: number } } {
  const handles = new WeakSet<FileHandle>();
  const read = { bytes: 0 };
  const io = withIo({
    async open(file, flags, mode) {
      const fh = await nodeIo.open(file, flags, mode);
      if (file.endsWith(path.join('transcripts', 's.jsonl'))) handles.add(fh);
      return fh;
    },
    async read(fh, buf, position) {
      const n = await nodeIo.read(fh, buf, position);
      if (handles.has(fh)) read.bytes += n;
      return n;
    },
    async readFile(file) {
      const data = await nodeIo.readFile(file);
      if (file.endsWith(path.join('transcripts', 's.jsonl'))) read.bytes += data.length;
      return data;
    },
  });
  return { io, read };
}

/** A dir with session "s" whose transcript has ENTRIES entries (~300 KB), written and closed cleanly. */
async function closedDir(): Promise<{ dir: string; file: string; summary: string }> {
  const dir = tempDir();
  // No write-ahead log: its records, which close leaves for the next start, would put back what
  // a test cuts from the file (the replay of a crash).
  const store = await openIn(dir, { durability: 'write' });
  await store.addSession(newSession('s'));
  await Promise.all(Array.from({ length: ENTRIES }, (_, i) =>
    store.appendTranscript('s', { ts: `2026-01-01T00:00:${String(i).padStart(4, '0')}Z`, role: 'user', text: `${i} ${'y'.repeat(200)}`, cost: 0.1, tokens_in: i })));
  await store.close();
  return { dir, file: path.join(dir, 'transcripts', 's.jsonl'), summary: path.join(dir, '.herrscher-state', 'transcripts', 's.summary') };
}

/** What the three readers answer. */
async function answers(store: Store): Promise<unknown> {
  const usage = await store.transcriptUsage('s');
  const last = await store.lastTranscriptTs('s');
  const infos = (await store.sessionInfos()).map((i) => ({ name: i.session.name, lastTs: i.lastTs, usage: i.usage }));
  return { usage, last, infos };
}

/** The answers of a store opened on `dir` with the summary out of the way (a scan, today's path). */
async function scanned(dir: string, summary: string): Promise<unknown> {
  const saved = existsSync(summary) ? readFileSync(summary) : undefined;
  if (saved) unlinkSync(summary);
  const store = await openIn(dir, { lock: false });
  try {
    return await answers(store);
  } finally {
    await store.close();
    if (saved) writeFileSync(summary, saved); // put back as it was
  }
}

/** How many bytes of the file the summary describes (its `size`). */
function summarizedSize(summary: string): number {
  const text = readFileSync(summary, 'utf8').trimEnd();
  return (JSON.parse(text.slice(text.indexOf(' ') + 1)) as { size: number }).size;
}

/** What a start may read of the transcript with a summary: its head, the byte before the summary's end, and the tail past it. */
const bound = (file: string, summary: string): number => HEAD_BYTES + 1 + (readFileSync(file).length - summarizedSize(summary));

test('after a clean close, usage/last/infos are answered from the summary, reading only the head of the transcript and the tail past the summary', async (t) => {
  const { dir, file, summary } = await closedDir();
  const expected = await scanned(dir, summary);
  const w = watchedIo();
  const store = await openIn(dir, { io: w.io });
  t.after(() => store.close());
  assert.deepEqual(await answers(store), expected);
  const size = readFileSync(file).length;
  assert.ok(bound(file, summary) <= HEAD_BYTES + 1 + SUMMARY_EVERY_BYTES, 'the summary is at most SUMMARY_EVERY_BYTES behind');
  assert.ok(size > 4 * (HEAD_BYTES + 1 + SUMMARY_EVERY_BYTES), `the file is big enough to tell (${size} bytes)`);
  assert.ok(w.read.bytes <= bound(file, summary), `read ${w.read.bytes} bytes of the transcript`);
  const u = (expected as { usage: { entries: number; tokens_in: number } }).usage;
  assert.equal(u.entries, ENTRIES);
  assert.equal(u.tokens_in, (ENTRIES * (ENTRIES - 1)) / 2);
});

test('appends after a start that used the summary are counted at the next start from the tail past it', async () => {
  const { dir, file, summary } = await closedDir();
  let store = await openIn(dir);
  await store.appendTranscript('s', { ts: 'z-newest', role: 'user', text: 'after', cost: 1.5 });
  await store.close();
  const expected = await scanned(dir, summary);
  const w = watchedIo();
  store = await openIn(dir, { io: w.io });
  try {
    const usage = await store.transcriptUsage('s');
    assert.equal(usage.entries, ENTRIES + 1);
    assert.equal(usage.lastTs, 'z-newest');
    assert.equal(await store.lastTranscriptTs('s'), 'z-newest');
    assert.deepEqual(await answers(store), expected);
    assert.ok(w.read.bytes <= bound(file, summary), `read ${w.read.bytes} bytes of the transcript`);
  } finally {
    await store.close();
  }
});

test('the summary is written inside the append that passes SUMMARY_EVERY_BYTES since the last one, and close writes none', async () => {
  const dir = tempDir();
  const store = await openIn(dir);
  const summary = path.join(dir, '.herrscher-state', 'transcripts', 's.summary');
  const file = path.join(dir, 'transcripts', 's.jsonl');
  await store.addSession(newSession('s'));
  const text = 'x'.repeat(1000);
  let i = 0;
  for (; !existsSync(summary); i++) {
    assert.ok(i < 2 * SUMMARY_EVERY_BYTES / 1000, 'no summary after twice its bound of appends');
    await store.appendTranscript('s', { ts: `t${i}`, role: 'user', text });
  }
  assert.ok(readFileSync(file).length >= SUMMARY_EVERY_BYTES, 'not before the bound');
  assert.equal(summarizedSize(summary), readFileSync(file).length, 'written by the append that just returned, describing the file it left');
  await store.appendTranscript('s', { ts: 'one more', role: 'user', text });
  const before = readFileSync(summary);
  await store.close();
  assert.deepEqual(readFileSync(summary), before, 'close wrote no summary');
});

test('a compaction leaves the new file\'s summary, inside the compacting append', { timeout: 60_000 }, async () => {
  const dir = tempDir();
  const store = await openIn(dir);
  const summary = path.join(dir, '.herrscher-state', 'transcripts', 's.summary');
  const file = path.join(dir, 'transcripts', 's.jsonl');
  await store.addSession(newSession('s'));
  const big = 'y'.repeat(COMPACT_TRIGGER_BYTES / 2 + 1024);
  await store.appendTranscript('s', { ts: 'big1', role: 'user', text: big, cost: 1 });
  await store.appendTranscript('s', { ts: 'big2', role: 'user', text: big, cost: 2 });
  const ino = statSync(file).ino;
  assert.ok(statSync(file).size < COMPACT_TRIGGER_BYTES, 'compacted');
  const text = readFileSync(summary, 'utf8').trimEnd();
  const v = JSON.parse(text.slice(text.indexOf(' ') + 1)) as { ino: number; size: number; count: number; firstSeq: number };
  assert.deepEqual({ ino: v.ino, size: v.size, count: v.count, firstSeq: v.firstSeq }, { ino, size: statSync(file).size, count: 1, firstSeq: 1 });
  await store.close();
  const w = watchedIo();
  const again = await openIn(dir, { io: w.io });
  try {
    const usage = await again.transcriptUsage('s');
    assert.deepEqual({ entries: usage.entries, cost: usage.cost, lastTs: usage.lastTs }, { entries: 2, cost: 3, lastTs: 'big2' });
    assert.ok(w.read.bytes <= HEAD_BYTES + 1, `read ${w.read.bytes} bytes of the transcript`);
  } finally {
    await again.close();
  }
});

test('a file appended outside the server (Go) after the summary: its entries past the summary are scanned and counted', async () => {
  const { dir, file, summary } = await closedDir();
  appendFileSync(file, `${JSON.stringify({ ts: 'z-go', role: 'assistant', text: 'by go', cost: 2 })}\n`);
  const expected = await scanned(dir, summary);
  const w = watchedIo();
  const store = await openIn(dir, { io: w.io });
  try {
    const got = await answers(store);
    assert.deepEqual(got, expected);
    assert.equal((got as { usage: { entries: number; lastTs: string } }).usage.entries, ENTRIES + 1);
    assert.equal((got as { last: string }).last, 'z-go');
    assert.ok(w.read.bytes <= bound(file, summary), `read ${w.read.bytes} bytes of the transcript`);
  } finally {
    await store.close();
  }
});

const stale: [string, (f: { file: string; summary: string }) => void, number][] = [
  ['the file was cut', ({ file }) => {
    const lines = readFileSync(file, 'utf8').split('\n').slice(0, 10);
    truncateSync(file, Buffer.byteLength(`${lines.join('\n')}\n`));
  }, 10],
  ['the file was replaced by a copy (another inode, same bytes)', ({ file }) => {
    copyFileSync(file, `${file}.other`);
    renameSync(`${file}.other`, file);
  }, ENTRIES],
  ['the summary was damaged', ({ summary }) => {
    const b = readFileSync(summary);
    b.writeUInt8(b.readUInt8(b.length - 10) ^ 0x01, b.length - 10);
    writeFileSync(summary, b);
  }, ENTRIES],
  ['the summary was deleted', ({ summary }) => unlinkSync(summary), ENTRIES],
  ['the summary ends in the middle of a line (well-formed, checksum fits)', ({ summary }) => {
    const text = readFileSync(summary, 'utf8').trimEnd();
    const v = JSON.parse(text.slice(9)) as { size: number };
    v.size -= 1;
    const json = JSON.stringify(v);
    writeFileSync(summary, sealLine(json));
  }, ENTRIES],
];

for (const [what, spoil, entries] of stale) {
  test(`a stale summary is not believed: ${what}; a scan of the whole file answers`, async () => {
    const f = await closedDir();
    spoil(f);
    const w = watchedIo();
    const store = await openIn(f.dir, { io: w.io });
    let got: unknown;
    try {
      got = await answers(store);
      assert.ok(w.read.bytes >= readFileSync(f.file).length, `the transcript was scanned (${w.read.bytes} bytes read of ${readFileSync(f.file).length})`);
      assert.equal((got as { usage: { entries: number } }).usage.entries, entries);
    } finally {
      await store.close();
    }
    // The scan's numbers are today's (the path without a summary).
    assert.deepEqual(got, await scanned(f.dir, f.summary));
  });
}

test('a removed transcript takes its summary with it', async () => {
  const { dir, summary } = await closedDir();
  const store = await openIn(dir);
  try {
    assert.equal(await store.removeTranscript('s'), true);
    assert.throws(() => readFileSync(summary), { code: 'ENOENT' });
    assert.equal((await store.transcriptUsage('s')).entries, 0);
  } finally {
    await store.close();
  }
});
