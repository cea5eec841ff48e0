// Reading a transcript backwards in 64 KiB blocks: every window gives the same entries a full
// read gives, whatever falls on a block boundary.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo } from '../../src/store/io.js';
import { parseAll, readForward, readNewest, startOfNewest } from '../../src/store/transcript-read.js';
import { tempDir } from '../helpers/temp-dir.js';

/** A line of exactly `bytes` bytes (its "\n" included) whose text names its index. */
function line(i: number, bytes: number): string {
  const head = `{"ts":"t${i}","role":"user","text":"`;
  const tail = '"}\n';
  return head + `${i}:`.padEnd(bytes - head.length - tail.length, '.') + tail;
}

const STEP = 64 * 1024;

test('a "\\n" that falls exactly on a block boundary neither repeats nor shifts entries', async () => {
  const dir = tempDir();
  const file = path.join(dir, 't.jsonl');
  // 1 KiB lines and a last one of 1023 bytes: the block that starts 64 KiB before the end starts
  // on the "\n" of a line, so a block's first byte is a line end.
  const lines = Array.from({ length: 300 }, (_, i) => line(i, 1024));
  lines.push(line(300, 1023));
  const text = lines.join('');
  assert.equal(text[text.length - STEP], '\n', 'the first byte of the last block is a line end');
  writeFileSync(file, text);
  const all = parseAll(Buffer.from(text));
  for (const [skip, limit] of [[0, 150], [10, 100], [63, 70], [64, 1], [65, 200], [0, 301]] as const) {
    const got = await readNewest(nodeIo, file, { skip, limit });
    const want = all.slice(Math.max(0, all.length - skip - limit), all.length - skip);
    assert.deepEqual(got.map((e) => e.ts), want.map((e) => e.ts), `skip ${skip}, limit ${limit}`);
  }
});

test('every window of a file of mixed line lengths reads what a full read gives', async () => {
  const dir = tempDir();
  const file = path.join(dir, 't.jsonl');
  const lines = Array.from({ length: 400 }, (_, i) => line(i, 100 + ((i * 7919) % 3000)));
  const text = lines.join('');
  writeFileSync(file, text);
  const all = parseAll(Buffer.from(text));
  for (let skip = 0; skip < all.length; skip += 37) {
    const got = await readNewest(nodeIo, file, { skip, limit: 50 });
    const want = all.slice(Math.max(0, all.length - skip - 50), all.length - skip);
    assert.deepEqual(got.map((e) => e.ts), want.map((e) => e.ts), `skip ${skip}`);
  }
});

/** Every entry of `file` read forward from `offset` in pages of `limit` entries and `maxBytes` bytes, with each page's size. */
async function forwardPages(file: string, size: number, ino: number, offset: number, skip: number, limit: number, maxBytes: number): Promise<{ ts: string[]; pages: number[] }> {
  const ts: string[] = [];
  const pages: number[] = [];
  for (let at = offset, first = true; ; first = false) {
    const got = await readForward(nodeIo, file, { ino, size, stillCurrent: () => true, offset: at, skip: first ? skip : 0, limit, maxBytes });
    if (got.entries.length === 0) return { ts, pages };
    ts.push(...got.entries.map((e) => e.ts));
    pages.push(got.entries.length);
    at = got.next;
  }
}

test('reading forward a page at a time gives what a full read gives, blank and bad lines skipped, the last line without "\\n" included', async () => {
  const dir = tempDir();
  const file = path.join(dir, 't.jsonl');
  const parts = Array.from({ length: 400 }, (_, i) => line(i, 100 + ((i * 7919) % 3000)));
  parts.splice(17, 0, '\n', 'not json\n', '   \n');
  parts.push(line(400, 90).slice(0, -1));
  const text = parts.join('');
  writeFileSync(file, text);
  const { ino, size } = await import('node:fs').then((fs) => fs.statSync(file));
  const all = parseAll(Buffer.from(text)).map((e) => e.ts);
  assert.equal(all.length, 401);
  for (const [limit, maxBytes] of [[1, 1 << 30], [50, 1 << 30], [1000, 8 * 1024], [7, 1]] as const) {
    const got = await forwardPages(file, size, ino, 0, 0, limit, maxBytes);
    assert.deepEqual(got.ts, all, `limit ${limit}, maxBytes ${maxBytes}`);
    assert.ok(got.pages.every((n) => n <= limit), `pages of at most ${limit}`);
  }
  // A bytes bound of 1 gives one entry a page: a longer line is still returned whole.
  assert.ok((await forwardPages(file, size, ino, 0, 0, 7, 1)).pages.every((n) => n === 1));
  // From the start of the newest 120 (found backwards), or by passing over the oldest: the same entries.
  const start = await startOfNewest(nodeIo, file, { limit: 120 });
  assert.deepEqual((await forwardPages(file, size, ino, start, 0, 64, 1 << 20)).ts, all.slice(-120));
  assert.deepEqual((await forwardPages(file, size, ino, 0, all.length - 120, 64, 1 << 20)).ts, all.slice(-120));
  // A window that ends before the file does: nothing past it.
  assert.deepEqual((await forwardPages(file, text.indexOf('\n') + 1, ino, 0, 0, 64, 1 << 20)).ts, all.slice(0, 1));
});

test('a page whose file keeps being replaced under the read is read inside the file\'s queue instead', async (t) => {
  const { withIo } = await import('../../src/store/io.js');
  const { Store } = await import('../../src/store/store.js');
  const { statePathIn } = await import('../helpers/temp-dir.js');
  const { newSession } = await import('../helpers/store.js');
  let lie = 0; // how many inode answers still claim another file (a compaction each time)
  const io = withIo({ inode: async (fh) => (lie-- > 0 ? -1 : (await fh.stat()).ino) });
  const store = await Store.open(statePathIn(tempDir()), { io });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  for (let i = 0; i < 5; i++) await store.appendTranscript('s', { ts: `t${i}`, role: 'user', text: `m${i}` });
  lie = 3; // every optimistic attempt sees "another" file
  const page = await store.readTranscriptPage('s', { limit: 2, before: 4 });
  assert.deepEqual(page, { entries: [{ ts: 't2', role: 'user', text: 'm2' }, { ts: 't3', role: 'user', text: 'm3' }], firstSeq: 2 });
  assert.ok(lie <= 0, 'the optimistic attempts were all spent');
});
