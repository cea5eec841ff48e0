// A compacted transcript's meta (first seq, dropped usage; two checksummed copies) and its
// summary, unit by unit: which copy is believed, which file a generation describes (inode and
// first bytes), what is damaged, what a failing call tells the caller. seq-survives.test.ts and
// transcript-summary.test.ts check the same end to end, across restarts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Generation, Summary, TranscriptMeta } from '../../src/store/transcript-meta.js';
import {
  findGeneration, HEAD_BYTES, headOf, metaRel, readSummary, removeMeta, removeSummary, summaryBeside, writeMeta, writeSummary,
} from '../../src/store/transcript-meta.js';
import { zeroSum } from '../../src/store/usage.js';
import type { UsageSum } from '../../src/store/usage.js';
import { countingIo, errno, storeError } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { sealLine } from '../../src/store/sealed-line.js';

const hex8 = (data: string | Buffer): string => crc32(data).toString(16).padStart(8, '0');
const sum = (entries: number, extra: Partial<UsageSum> = {}): UsageSum => ({ ...zeroSum(), entries, cost: entries / 4, tokens_in: entries * 3, firstTs: 'a', lastTs: 'b', ...extra });
const REL = 'side/transcripts/s.json';

/** A meta file's path in a fresh dir, and a transcript's first bytes. */
function metaFile(): string {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'side', 'transcripts'), { recursive: true });
  return path.join(dir, REL);
}

/** A meta's text as the store writes it: a sealed line. */
const framed = (v: unknown): string => sealLine(JSON.stringify(v));

const gen = (ino: number, prefix: Buffer | undefined, firstSeq: number, dropped = sum(firstSeq)): Generation =>
  ({ ino, ...(prefix ? { head: headOf(prefix) } : {}), firstSeq, dropped });
const PREFIX = Buffer.from('{"ts":"t","role":"user","text":"first line of the file"}\n');

/** A prefix whose checksum has a leading zero hex digit (so its padding shows). */
function prefixWithSmallChecksum(): Buffer {
  for (let i = 0; ; i++) {
    const b = Buffer.from(`line ${i}\n`);
    if (crc32(b) < 0x10000000) return b;
  }
}

test('headOf covers the first HEAD_BYTES bytes at most, with a zero-padded checksum', () => {
  const big = Buffer.alloc(HEAD_BYTES + 100, 'x');
  big[HEAD_BYTES + 50] = 0x79;
  assert.equal(headOf(big), `${HEAD_BYTES}:${hex8(big.subarray(0, HEAD_BYTES))}`);
  const small = prefixWithSmallChecksum();
  assert.equal(headOf(small), `${small.length}:${hex8(small)}`);
  assert.match(headOf(small), /:0[0-9a-f]{7}$/);
  assert.equal(headOf(Buffer.alloc(0)), `0:${hex8(Buffer.alloc(0))}`);
});

test('metaRel and summaryBeside name the side folder\'s files', () => {
  assert.equal(metaRel('s'), '.herrscher-state/transcripts/s.json');
  assert.equal(metaRel('s', 'other'), 'other/transcripts/s.json');
  assert.deepEqual(summaryBeside('/d/x.json/t/s.json', 'x.json/t/s.json'), ['/d/x.json/t/s.summary', 'x.json/t/s.summary']);
});

test('writeMeta writes the meta then its copy, the same checksummed bytes, each synced with its folder', async () => {
  const file = metaFile();
  const { io, calls } = countingIo();
  const order: string[] = [];
  const seen = withIo({
    ...io,
    writeAtomic: (f, data, opts) => {
      order.push(`${path.basename(f)} sync=${opts.sync} mode=${opts.mode.toString(8)}`);
      return io.writeAtomic(f, data, opts);
    },
  });
  const meta: TranscriptMeta = { ...gen(7, PREFIX, 12, sum(11, { tokens_out: 2n ** 60n })), prev: gen(6, undefined, 1, sum(0)) };
  await writeMeta(seen, file, REL, meta);
  assert.deepEqual(order, ['s.json sync=true mode=600', 's.json.copy sync=true mode=600']);
  assert.equal(calls.syncDir, 2);
  const text = readFileSync(file, 'utf8');
  assert.equal(readFileSync(`${file}.copy`, 'utf8'), text);
  const json = text.slice(9, -1);
  assert.equal(text, sealLine(json));
  const parsed = JSON.parse(json) as Record<string, unknown>;
  assert.deepEqual(Object.keys(parsed), ['ino', 'head', 'firstSeq', 'dropped', 'prev']);
  assert.equal((parsed.dropped as Record<string, unknown>).tokens_out, (2n ** 60n).toString());
  // Read back: the current generation for its own file, the previous one for the older file.
  assert.deepEqual((await findGeneration(nodeIo, file, REL, 7, PREFIX)).gen, meta);
  assert.deepEqual((await findGeneration(nodeIo, file, REL, 6, Buffer.from('other'))).gen, meta.prev);
  // Without a prev, none is written.
  await writeMeta(nodeIo, file, REL, gen(8, PREFIX, 3));
  assert.equal('prev' in (JSON.parse(readFileSync(file, 'utf8').slice(9)) as object), false);
});

test('writeMeta makes its folder (one level: the side folder exists), and a failing write names the copy it was writing', async () => {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'made'));
  const file = path.join(dir, 'made', 'transcripts', 's.json');
  await writeMeta(nodeIo, file, 'made/transcripts/s.json', gen(1, PREFIX, 1));
  assert.equal(readFileSync(`${file}.copy`, 'utf8'), readFileSync(file, 'utf8'));
  const failing = withIo({ writeAtomic: (f, d, o) => (f.endsWith('.copy') ? Promise.reject(errno('ENOSPC')) : nodeIo.writeAtomic(f, d, o)) });
  await assert.rejects(() => writeMeta(failing, file, 'made/transcripts/s.json', gen(2, PREFIX, 1)),
    storeError('io', ['write made/transcripts/s.json.copy: ENOSPC'], 'ENOSPC'));
  const syncFails = withIo({ syncDir: () => Promise.reject(errno('EIO', 'fsync')) });
  await assert.rejects(() => writeMeta(syncFails, file, 'made/transcripts/s.json', gen(2, PREFIX, 1)), storeError('io', ['write made/transcripts/s.json: EIO'], 'EIO'));
});

test('findGeneration: both copies good, one missing, both missing', async () => {
  const file = metaFile();
  const none = await findGeneration(nodeIo, file, REL, 1, PREFIX);
  assert.deepEqual(none, { damaged: [], missing: [REL, `${REL}.copy`], any: false });
  writeFileSync(`${file}.copy`, framed(gen(1, PREFIX, 5)));
  assert.deepEqual(await findGeneration(nodeIo, file, REL, 1, PREFIX), { gen: gen(1, PREFIX, 5), damaged: [], missing: [REL], any: true });
  writeFileSync(file, framed(gen(1, PREFIX, 9)));
  // Both fit: the meta's own is used, the copy second.
  assert.deepEqual(await findGeneration(nodeIo, file, REL, 1, PREFIX), { gen: gen(1, PREFIX, 9), damaged: [], missing: [], any: true });
});

test('findGeneration: a damaged copy is reported and the other used, whichever it is', async () => {
  const file = metaFile();
  const good = framed(gen(3, PREFIX, 4));
  const damages: [string, string][] = [
    ['a flipped byte', good.replace('"firstSeq":4', '"firstSeq":5')],
    ['a checksum of another text', `${hex8('x')} ${good.slice(9)}`],
    ['not JSON behind a right checksum', `${hex8('{nope')} {nope\n`],
    ['empty', ''],
    ['a JSON array', framed([1, 2])],
    ['null', framed(null)],
    ['an ino that is no integer', framed({ ...gen(3, PREFIX, 4), ino: 3.5 })],
    ['an ino given as a string', framed({ ...gen(3, PREFIX, 4), ino: '3' })],
    ['a firstSeq that is no integer', framed({ ...gen(3, PREFIX, 4), firstSeq: '4' })],
    ['no dropped usage', framed({ ino: 3, head: headOf(PREFIX), firstSeq: 4 })],
    ['a prev that is not a generation', framed({ ...gen(3, PREFIX, 4), prev: { ino: 2 } })],
    ['another file\'s inode', framed(gen(99, PREFIX, 4))],
    ['another file\'s inode, and a prev of a third', framed({ ...gen(99, PREFIX, 4), prev: gen(98, PREFIX, 1) })],
    ['another file\'s first bytes', framed(gen(3, Buffer.from('something else'), 4))],
  ];
  for (const [what, bad] of damages) {
    writeFileSync(file, bad);
    writeFileSync(`${file}.copy`, good);
    const a = await findGeneration(nodeIo, file, REL, 3, PREFIX);
    assert.deepEqual(a, { gen: gen(3, PREFIX, 4), damaged: [REL], missing: [], any: true }, `meta: ${what}`);
    writeFileSync(file, good);
    writeFileSync(`${file}.copy`, bad);
    const b = await findGeneration(nodeIo, file, REL, 3, PREFIX);
    assert.deepEqual(b, { gen: gen(3, PREFIX, 4), damaged: [`${REL}.copy`], missing: [], any: true }, `copy: ${what}`);
  }
});

test('findGeneration reads the first format (bare JSON, no head): the inode alone names the file', async () => {
  const file = metaFile();
  writeFileSync(file, `${JSON.stringify(gen(5, undefined, 20))}\n\n`);
  const found = await findGeneration(nodeIo, file, REL, 5, Buffer.from('any bytes'));
  assert.deepEqual(found.gen, gen(5, undefined, 20));
  assert.equal((await findGeneration(nodeIo, file, REL, 6, Buffer.from('any bytes'))).gen, undefined);
  // A head that is not a string is left out (first format), not believed.
  writeFileSync(file, framed({ ...gen(5, undefined, 20), head: 12 }));
  assert.deepEqual((await findGeneration(nodeIo, file, REL, 5, PREFIX)).gen, gen(5, undefined, 20));
});

test('a generation\'s head fits only the file whose first n bytes it names', async () => {
  const file = metaFile();
  const twelve = Buffer.from('0123456789ab');
  const head = headOf(twelve);
  assert.equal(head.split(':')[0], '12');
  const fits = async (h: string, prefix: Buffer): Promise<boolean> => {
    writeFileSync(file, framed({ ino: 1, head: h, firstSeq: 1, dropped: sum(0) }));
    return (await findGeneration(nodeIo, file, REL, 1, prefix)).gen !== undefined;
  };
  assert.equal(await fits(head, twelve), true, 'the same bytes');
  assert.equal(await fits(head, Buffer.concat([twelve, Buffer.from('appended later')])), true, 'the file grew after them');
  assert.equal(await fits(head, twelve.subarray(0, 11)), false, 'the file is shorter than the bytes named');
  assert.equal(await fits(head, Buffer.from('0123456789aX')), false, 'another byte among them');
  assert.equal(await fits(`x${head}`, twelve), false, 'garbage before the count');
  assert.equal(await fits(`${head}0`, twelve), false, 'garbage after the checksum');
  assert.equal(await fits(`${head.slice(0, -1)}`, twelve), false, 'a checksum too short');
  assert.equal(await fits(`12:${head.slice(3).toUpperCase()}`, Buffer.from('ABCDEFGHIJKL')), false, 'upper-case hex is not the format');
  assert.equal(await fits(`a:${head.slice(3)}`, twelve), false, 'no count');
  assert.equal(await fits('', twelve), false, 'empty');
});

test('findGeneration: a folder or a FIFO at a copy\'s name is a damaged copy; another read error is thrown, naming it', async () => {
  const file = metaFile();
  mkdirSync(file);
  writeFileSync(`${file}.copy`, framed(gen(3, PREFIX, 4)));
  assert.deepEqual(await findGeneration(nodeIo, file, REL, 3, PREFIX), { gen: gen(3, PREFIX, 4), damaged: [REL], missing: [], any: true });
  const other = metaFile();
  mkfifo(`${other}.copy`);
  assert.deepEqual(await findGeneration(nodeIo, other, REL, 3, PREFIX), { damaged: [`${REL}.copy`], missing: [REL], any: true });
  const failing = withIo({ readFile: (f) => (f.endsWith('.copy') ? Promise.reject(errno('EACCES', 'open')) : nodeIo.readFile(f)) });
  await assert.rejects(() => findGeneration(failing, file, REL, 3, PREFIX), storeError('io', [`read ${REL}.copy: EACCES`], 'EACCES'));
});

test('removeMeta removes both copies; one already gone is fine, another error names the copy', async () => {
  const file = metaFile();
  writeFileSync(file, 'x');
  writeFileSync(`${file}.copy`, 'x');
  await removeMeta(nodeIo, file, REL);
  assert.deepEqual(await findGeneration(nodeIo, file, REL, 1, PREFIX), { damaged: [], missing: [REL, `${REL}.copy`], any: false });
  writeFileSync(`${file}.copy`, 'x');
  await removeMeta(nodeIo, file, REL);
  assert.equal((await findGeneration(nodeIo, file, REL, 1, PREFIX)).any, false);
  const failing = withIo({ unlink: (f) => (f.endsWith('.copy') ? Promise.reject(errno('EACCES', 'unlink')) : nodeIo.unlink(f)) });
  await assert.rejects(() => removeMeta(failing, file, REL), storeError('io', [`remove ${REL}.copy: EACCES`], 'EACCES'));
});

const SUMMARY_REL = 'side/transcripts/s.summary';
const summaryOf = (prefix: Buffer, size: number): Summary => ({
  ino: 4, size, head: headOf(prefix), count: 3, firstSeq: 10, lastTs: 'z', dropped: sum(9), total: sum(12, { cache_create: 2n ** 55n }),
});

test('writeSummary writes it unsynced and checksummed; readSummary believes it only for the file whose first bytes it names', async () => {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'new'));
  const file = path.join(dir, 'new', 'transcripts', 's.summary');
  const { io, calls } = countingIo();
  const syncs: boolean[] = [];
  const seen = withIo({ ...io, writeAtomic: (f, d, o) => (syncs.push(o.sync), io.writeAtomic(f, d, o)) });
  const s = summaryOf(PREFIX, 500);
  await writeSummary(seen, file, SUMMARY_REL, s);
  assert.deepEqual(syncs, [false]);
  assert.equal(calls.syncDir, 0);
  const text = readFileSync(file, 'utf8');
  assert.equal(text, `${hex8(text.slice(9, -1))} ${text.slice(9, -1)}\n`);
  const of = { ino: 4, size: 500, prefix: PREFIX };
  assert.deepEqual(await readSummary(nodeIo, file, SUMMARY_REL, of), s);
  // A file grown since (appended to) still starts with what the summary names: the tail is the reader's to scan.
  assert.deepEqual(await readSummary(nodeIo, file, SUMMARY_REL, { ...of, size: 501 }), s);
  const stale: [string, typeof of][] = [
    ['another inode', { ...of, ino: 5 }],
    ['a shorter file (cut)', { ...of, size: 499 }],
    ['other first bytes', { ...of, prefix: Buffer.from('x') }],
  ];
  for (const [what, other] of stale) assert.equal(await readSummary(nodeIo, file, SUMMARY_REL, other), undefined, what);
  // A count that does not add up with the dropped entries to the total is not believed.
  await writeSummary(nodeIo, file, SUMMARY_REL, { ...s, count: 4 });
  assert.equal(await readSummary(nodeIo, file, SUMMARY_REL, of), undefined);
  const failing = withIo({ writeAtomic: () => Promise.reject(errno('ENOSPC')) });
  await assert.rejects(() => writeSummary(failing, file, SUMMARY_REL, s), storeError('io', [`write ${SUMMARY_REL}: ENOSPC`], 'ENOSPC'));
});

test('readSummary: anything damaged or of another shape is not believed (a scan follows)', async () => {
  const dir = tempDir();
  const file = path.join(dir, 's.summary');
  const s = summaryOf(PREFIX, 500);
  const of = { ino: 4, size: 500, prefix: PREFIX };
  await writeSummary(nodeIo, file, SUMMARY_REL, s);
  const good = readFileSync(file, 'utf8');
  const json = JSON.parse(good.slice(9)) as Record<string, unknown>;
  assert.deepEqual(await readSummary(nodeIo, file, SUMMARY_REL, of), s, 'the control case');
  const bad: [string, string][] = [
    ['a changed byte', good.replace('"count":3', '"count":2')],
    ['no checksum', `${good.slice(9)}`],
    ['a checksum with no space after it', `${good.slice(0, 8)}${good.slice(9)}`],
    ['garbage before the checksum', `x${good}`],
    ['not JSON behind a right checksum', `${hex8('{x')} {x\n`],
    ['null', framed(null)],
    ...(['ino', 'size', 'count', 'firstSeq'] as const).map((k): [string, string] => [`${k} not an integer`, framed({ ...json, [k]: 1.5 })]),
    ['head not a string', framed({ ...json, head: 1 })],
    ['lastTs not a string', framed({ ...json, lastTs: 1 })],
    ['dropped missing', framed({ ...json, dropped: undefined })],
    ['total damaged', framed({ ...json, total: { entries: 'x' } })],
  ];
  for (const [what, text] of bad) {
    writeFileSync(file, text);
    assert.equal(await readSummary(nodeIo, file, SUMMARY_REL, of), undefined, what);
  }
  writeFileSync(file, `${good}\n\n`);
  assert.deepEqual(await readSummary(nodeIo, file, SUMMARY_REL, of), s, 'trailing blank lines are fine');
});

test('readSummary: none is nothing, a folder or FIFO at its name is ignored and said, another error is thrown; removeSummary', async () => {
  const dir = tempDir();
  const file = path.join(dir, 's.summary');
  const of = { ino: 4, size: 500, prefix: PREFIX };
  const said: string[] = [];
  assert.equal(await readSummary(nodeIo, file, SUMMARY_REL, of, (w) => said.push(w)), undefined);
  assert.equal(said.length, 0);
  mkdirSync(file);
  assert.equal(await readSummary(nodeIo, file, SUMMARY_REL, of, (w) => said.push(w)), undefined);
  const fifo = path.join(dir, 'f.summary');
  mkfifo(fifo);
  assert.equal(await readSummary(nodeIo, fifo, SUMMARY_REL, of, (w) => said.push(w)), undefined);
  assert.equal(said.length, 2);
  for (const w of said) assert.ok(w.startsWith(`${SUMMARY_REL} is not a regular file (`) && w.endsWith('); ignored, the transcript is scanned instead'), w);
  assert.equal(await readSummary(nodeIo, fifo, SUMMARY_REL, of), undefined, 'the default listener says nothing and throws nothing');
  const failing = withIo({ readFile: () => Promise.reject(errno('EACCES', 'open')) });
  await assert.rejects(() => readSummary(failing, file, SUMMARY_REL, of), storeError('io', [`read ${SUMMARY_REL}: EACCES`], 'EACCES'));
  const plain = path.join(dir, 'p.summary');
  writeFileSync(plain, 'x');
  await removeSummary(nodeIo, plain, SUMMARY_REL);
  await removeSummary(nodeIo, plain, SUMMARY_REL);
  assert.equal(await readSummary(nodeIo, plain, SUMMARY_REL, of), undefined);
  const unlinkFails = withIo({ unlink: () => Promise.reject(errno('EACCES', 'unlink')) });
  await assert.rejects(() => removeSummary(unlinkFails, plain, SUMMARY_REL), storeError('io', [`remove ${SUMMARY_REL}: EACCES`], 'EACCES'));
});

/** A FIFO at `file` (node:fs has no mkfifo). */
function mkfifo(file: string): void {
  execFileSync('mkfifo', [file]);
}
