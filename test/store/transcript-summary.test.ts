// Restart in O(sessions): a clean stop leaves each transcript's summary (count, usage, newest ts,
// and the inode, size and first bytes of the file it describes), and the next start answers
// usage/last/infos from it, reading only the file's first bytes to check it is the same file.
// Anything that makes the summary stale (an append outside the server, a cut, another inode, a
// damaged or missing summary) is caught, and a scan gives the right numbers (and a new summary).
import assert from 'node:assert/strict';
import { appendFileSync, copyFileSync, readFileSync, renameSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Store } from '../../src/store/store.js';
import { HEAD_BYTES } from '../../src/store/transcript-meta.js';
import { newSession, openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { sealLine } from '../../src/store/sealed-line.js';

const ENTRIES = 400;

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

/** A dir with session "s" whose transcript has ENTRIES entries (~100 KB), written and closed cleanly. */
async function closedDir(): Promise<{ dir: string; file: string; summary: string }> {
  const dir = tempDir();
  const store = await openIn(dir);
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
  const saved = readFileSync(summary);
  unlinkSync(summary);
  const store = await openIn(dir, { lock: false });
  try {
    return await answers(store);
  } finally {
    await store.close();
    writeFileSync(summary, saved); // put back as it was (close wrote a fresh one)
  }
}

test('after a clean close, usage/last/infos are answered from the summary, reading only the first bytes of the transcript', async (t) => {
  const { dir, file, summary } = await closedDir();
  const expected = await scanned(dir, summary);
  const w = watchedIo();
  const store = await openIn(dir, { io: w.io });
  t.after(() => store.close());
  assert.deepEqual(await answers(store), expected);
  const size = readFileSync(file).length;
  assert.ok(size > 20 * HEAD_BYTES, `the file is big enough to tell (${size} bytes)`);
  assert.ok(w.read.bytes <= HEAD_BYTES, `read ${w.read.bytes} bytes of the transcript`);
  const u = (expected as { usage: { entries: number; tokens_in: number } }).usage;
  assert.equal(u.entries, ENTRIES);
  assert.equal(u.tokens_in, (ENTRIES * (ENTRIES - 1)) / 2);
});

test('appends after a start that used the summary are counted, and the next clean stop describes them', async () => {
  const { dir } = await closedDir();
  let store = await openIn(dir);
  await store.appendTranscript('s', { ts: 'z-newest', role: 'user', text: 'after', cost: 1.5 });
  await store.close();
  const w = watchedIo();
  store = await openIn(dir, { io: w.io });
  try {
    const usage = await store.transcriptUsage('s');
    assert.equal(usage.entries, ENTRIES + 1);
    assert.equal(usage.lastTs, 'z-newest');
    assert.equal(await store.lastTranscriptTs('s'), 'z-newest');
    assert.ok(w.read.bytes <= HEAD_BYTES, `read ${w.read.bytes} bytes of the transcript`);
  } finally {
    await store.close();
  }
});

const stale: [string, (f: { file: string; summary: string }) => void, number][] = [
  ['the file was appended outside the server (Go)', ({ file }) =>
    appendFileSync(file, `${JSON.stringify({ ts: 'z-go', role: 'assistant', text: 'by go', cost: 2 })}\n`), ENTRIES + 1],
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
  ['the summary is about another size (well-formed, checksum fits)', ({ summary }) => {
    const text = readFileSync(summary, 'utf8').trimEnd();
    const v = JSON.parse(text.slice(9)) as { size: number };
    v.size += 1;
    const json = JSON.stringify(v);
    writeFileSync(summary, sealLine(json));
  }, ENTRIES],
];

for (const [what, spoil, entries] of stale) {
  test(`a stale summary is not believed: ${what}; a scan answers, and a new summary is left`, async () => {
    const f = await closedDir();
    spoil(f);
    const w = watchedIo();
    let store = await openIn(f.dir, { io: w.io });
    let got: unknown;
    try {
      got = await answers(store);
      assert.ok(w.read.bytes > HEAD_BYTES, `the transcript was scanned (${w.read.bytes} bytes read)`);
      assert.equal((got as { usage: { entries: number } }).usage.entries, entries);
    } finally {
      await store.close();
    }
    // The scan's numbers are today's (the path without a summary), and the next start uses the rebuilt summary.
    assert.deepEqual(got, await scanned(f.dir, f.summary));
    const w2 = watchedIo();
    store = await openIn(f.dir, { io: w2.io });
    try {
      assert.deepEqual(await answers(store), got);
      assert.ok(w2.read.bytes <= HEAD_BYTES, `read ${w2.read.bytes} bytes of the transcript`);
    } finally {
      await store.close();
    }
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
