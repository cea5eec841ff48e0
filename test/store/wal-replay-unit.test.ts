// The write-ahead log's scan and replay called directly on a state dir: what makes a line damaged
// (each reason said), which files a record may touch, the seqs handed back before the log is
// emptied, what the replay says and returns, and that a failure in the middle empties nothing.
// wal.test.ts, wal-damaged.test.ts and replay.test.ts check the same through a crashed store.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import type { Io } from '../../src/store/io.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { storeLog } from '../../src/store/store-log.js';
import { scanWal, WAL_REL, walRelIn } from '../../src/store/wal-record.js';
import { replayWal } from '../../src/store/wal-replay.js';
import { closeFailsIo, errno, storeError } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { sealLine } from '../../src/store/sealed-line.js';

const hex8 = (s: string): string => crc32(s).toString(16).padStart(8, '0');
const framed = (json: string): string => sealLine(json);
const rec = (r: object): string => framed(JSON.stringify(r));

test('scanWal: each kind of damaged line is skipped with its reason and line number; the records around it are read', () => {
  const good = { f: 'transcripts/s.jsonl', i: 1, o: 0, d: 'x\n' };
  const lines: [string, string | undefined][] = [
    [rec(good), undefined],
    [rec({ ...good, s: 3 }), undefined],
    [`${hex8('{}')}x{}\n`, 'checksum mismatch'],
    [`${hex8('{"a":1}')} {"a":2}\n`, 'checksum mismatch'],
    [framed('{nope'), 'not JSON'],
    [rec([good]), 'not an object'],
    [framed('null'), 'not an object'],
    [framed('7'), 'not an object'],
    [rec({ ...good, f: 1 }), 'f is not a string'],
    [rec({ ...good, i: -1 }), 'i is not an inode number'],
    [rec({ ...good, i: '1' }), 'i is not an inode number'],
    [rec({ ...good, o: 1.5 }), 'o is not an offset (a whole number ≥ 0)'],
    [rec({ ...good, o: -1 }), 'o is not an offset (a whole number ≥ 0)'],
    [rec({ ...good, d: 5 }), 'd is not a string'],
    [rec({ ...good, s: -2 }), 's is not a seq (a whole number ≥ 0)'],
    [rec({ ...good, s: '3' }), 's is not a seq (a whole number ≥ 0)'],
    [rec({ ...good, i: 0, o: 0, s: 0 }), undefined],
  ];
  const torn = rec(good).slice(0, 20);
  const scan = scanWal(Buffer.from(lines.map(([l]) => l).join('') + torn));
  const damaged = lines.flatMap(([, why], i) => (why ? [{ line: i + 1, why }] : []));
  assert.deepEqual(scan.damaged, damaged);
  assert.deepEqual(scan.records, [good, { ...good, s: 3 }, { ...good, i: 0, o: 0, s: 0 }]);
  assert.deepEqual(scanWal(Buffer.alloc(0)), { records: [], damaged: [] });
  // An empty first line is a damaged line like any other: what follows it is still read.
  assert.deepEqual(scanWal(Buffer.from(`\n${rec(good)}`)), { records: [good], damaged: [{ line: 1, why: 'checksum mismatch' }] });
});

test('another state file\'s log is in its own side folder', () => {
  assert.equal(walRelIn('.herrscher-state/b.json.d'), '.herrscher-state/b.json.d/wal.log');
});

test('scanWal: a checksum with a leading zero is written and read zero-padded', () => {
  let json = '';
  for (let n = 0; ; n++) {
    json = JSON.stringify({ f: 'transcripts/s.jsonl', i: n, o: 0, d: '' });
    if (crc32(json) < 0x10000000) break;
  }
  assert.deepEqual(scanWal(Buffer.from(framed(json))).records, [JSON.parse(json)]);
  assert.equal(scanWal(Buffer.from(`${crc32(json).toString(16)} ${json}\n`)).damaged.length, 1, 'unpadded is not the format');
});

interface Replay {
  dir: string;
  warnings: string[];
  errors: string[];
  log: ReturnType<typeof storeLog>;
}

function replayDir(records: string): Replay {
  const dir = tempDir();
  mkdirSync(path.join(dir, '.herrscher-state'));
  mkdirSync(path.join(dir, 'transcripts'));
  writeFileSync(path.join(dir, WAL_REL), records);
  const warnings: string[] = [];
  const errors: string[] = [];
  return { dir, warnings, errors, log: storeLog({ warn: (m) => warnings.push(m), error: (m) => errors.push(m) }) };
}

/** A transcript file and its inode. */
function transcript(dir: string, name: string, text: string): { file: string; ino: number } {
  const file = path.join(dir, 'transcripts', `${name}.jsonl`);
  writeFileSync(file, text);
  return { file, ino: statSync(file).ino };
}

test('replayWal: no log is nothing to do; a log that cannot be read is an error naming it', async () => {
  const dir = tempDir();
  assert.equal(await replayWal(nodeIo, dir, storeLog({})), 0);
  const failing = withIo({ readFile: () => Promise.reject(errno('EACCES', 'open')) });
  await assert.rejects(() => replayWal(failing, dir, storeLog({})), storeError('io', [`read ${WAL_REL}: EACCES`], 'EACCES'));
});

test('replayWal: records put back, counted and said; seqs handed back, the highest per file; the log emptied after', async () => {
  const r = replayDir('');
  const a = transcript(r.dir, 'a', '');
  const b = transcript(r.dir, 'b', 'b1\n');
  writeFileSync(path.join(r.dir, WAL_REL), [
    rec({ f: 'transcripts/a.jsonl', i: a.ino, o: 0, d: 'a1\n', s: 1 }),
    rec({ f: 'transcripts/a.jsonl', i: a.ino, o: 3, d: 'a2\n', s: 4 }),
    rec({ f: 'transcripts/a.jsonl', i: a.ino, o: 6, d: 'a3\n', s: 3 }),
    rec({ f: 'transcripts/b.jsonl', i: b.ino, o: 0, d: 'b1\n', s: 1 }),
  ].join(''));
  let seqs: [string, number][] = [];
  let emptiedBefore: number | undefined;
  const n = await replayWal(nodeIo, r.dir, r.log, async (m) => {
    seqs = [...m].sort();
    emptiedBefore = statSync(path.join(r.dir, WAL_REL)).size;
  });
  assert.equal(n, 3);
  assert.equal(readFileSync(a.file, 'utf8'), 'a1\na2\na3\n');
  assert.equal(readFileSync(b.file, 'utf8'), 'b1\n', 'bytes already there are not written twice');
  assert.deepEqual(seqs, [['transcripts/a.jsonl', 4], ['transcripts/b.jsonl', 1]]);
  assert.ok((emptiedBefore ?? 0) > 0, 'the seqs are handed back before the log is emptied');
  assert.equal(statSync(path.join(r.dir, WAL_REL)).size, 0);
  assert.deepEqual(r.warnings, ['wal: 3 append(s) the files lacked after a crash were put back']);
  assert.deepEqual(r.errors, []);
  // Again: everything is in place, nothing to say.
  writeFileSync(path.join(r.dir, WAL_REL), rec({ f: 'transcripts/a.jsonl', i: a.ino, o: 0, d: 'a1\n' }));
  assert.equal(await replayWal(nodeIo, r.dir, r.log), 0);
  assert.equal(r.warnings.length, 1);
});

test('replayWal: a record without bytes (a file\'s first append, durable in the file itself) puts nothing back; its seq is handed back, its keys only while the file is the one its head names', async () => {
  const r = replayDir('');
  const ours = transcript(r.dir, 'a', 'a1\n');
  const other = transcript(r.dir, 'b', 'another writer\'s\n'); // the same inode number as the record's, other first bytes
  writeFileSync(path.join(r.dir, WAL_REL), [
    rec({ f: 'transcripts/a.jsonl', i: ours.ino, h: `3:${hex8('a1\n')}`, o: 0, d: '', s: 1, k: [['w', 1, 0]] }),
    rec({ f: 'transcripts/b.jsonl', i: other.ino, h: `3:${hex8('b1\n')}`, o: 0, d: '', s: 7, k: [['w', 2, 6]] }),
    rec({ f: 'transcripts/b.jsonl', i: other.ino, h: `3:${hex8('b1\n')}`, o: 3, d: 'b2\n', s: 8 }),
    rec({ f: 'transcripts/gone.jsonl', i: 1, h: `3:${hex8('g1\n')}`, o: 0, d: '', s: 2, k: [['w', 3, 1]] }),
  ].join(''));
  let seqs: [string, number][] = [];
  let keys: unknown[] = [];
  assert.equal(await replayWal(nodeIo, r.dir, r.log, async (m, k) => {
    seqs = [...m].sort();
    keys = [...k];
  }), 0);
  assert.deepEqual(seqs, [['transcripts/a.jsonl', 1], ['transcripts/b.jsonl', 8], ['transcripts/gone.jsonl', 2]]);
  assert.deepEqual(keys, [['w', 1, 0]], 'only the key whose bytes the file still holds');
  assert.equal(readFileSync(ours.file, 'utf8'), 'a1\n');
  assert.equal(readFileSync(other.file, 'utf8'), 'another writer\'s\n', 'nothing of the other file\'s records went into it');
  assert.deepEqual(r.errors, []);
  assert.match(r.warnings.join('\n'), /2 record\(s\) for transcripts\/b\.jsonl left alone/);
});

test('replayWal: a record of an earlier build at offset 0 (its bytes, an empty head) still puts them back into a file that lost them, by its inode', async () => {
  const r = replayDir('');
  const a = transcript(r.dir, 'a', '');
  writeFileSync(path.join(r.dir, WAL_REL), [
    rec({ f: 'transcripts/a.jsonl', i: a.ino, h: '0:00000000', o: 0, d: 'a1\n', s: 1 }),
    rec({ f: 'transcripts/a.jsonl', i: a.ino, h: '3:' + hex8('a1\n'), o: 3, d: 'a2\n', s: 2 }),
  ].join(''));
  assert.equal(await replayWal(nodeIo, r.dir, r.log), 2);
  assert.equal(readFileSync(a.file, 'utf8'), 'a1\na2\n');
  assert.deepEqual(r.errors, []);
});

test('replayWal with keepLog leaves the log\'s records where they are', async () => {
  const r = replayDir('');
  const a = transcript(r.dir, 'a', '');
  const log = rec({ f: 'transcripts/a.jsonl', i: a.ino, o: 0, d: 'a1\n' });
  writeFileSync(path.join(r.dir, WAL_REL), log);
  assert.equal(await replayWal(nodeIo, r.dir, r.log, undefined, { keepLog: true }), 1);
  assert.equal(readFileSync(path.join(r.dir, WAL_REL), 'utf8'), log);
  assert.equal(readFileSync(a.file, 'utf8'), 'a1\n');
});

test('replayWal: a record naming a file the store does not write is ignored with an error; a gone or replaced file is left alone', async () => {
  const r = replayDir('');
  const a = transcript(r.dir, 'a', 'kept\n');
  writeFileSync(path.join(r.dir, 'state.json'), '{}');
  const stray = ['state.json', 'transcripts/../state.json', 'transcripts/x/y.jsonl', 'participants/p.jsonl', 'transcripts/a.json', 'xtranscripts/a.jsonl', 'transcripts/a.jsonl.old'];
  writeFileSync(path.join(r.dir, WAL_REL), [
    ...stray.map((f) => rec({ f, i: 1, o: 0, d: 'evil\n' })),
    rec({ f: 'transcripts/gone.jsonl', i: 5, o: 0, d: 'g\n' }),
    rec({ f: 'transcripts/a.jsonl', i: a.ino + 1, o: 0, d: 'other inode\n' }),
  ].join(''));
  assert.equal(await replayWal(nodeIo, r.dir, r.log), 0);
  assert.deepEqual(r.errors, stray.map((f) => `wal: record for ${JSON.stringify(f)} ignored: not a file this store writes`));
  assert.equal(readFileSync(path.join(r.dir, 'state.json'), 'utf8'), '{}');
  assert.equal(readFileSync(a.file, 'utf8'), 'kept\n');
  assert.equal(existsSync(path.join(r.dir, 'transcripts/gone.jsonl')), false);
});

test('replayWal: damaged lines are said in one error (the first ten, then …), the valid ones replayed', async () => {
  const r = replayDir('');
  const a = transcript(r.dir, 'a', '');
  const bad = Array.from({ length: 12 }, (_, i) => `${hex8('x')} {"bad":${i}}\n`);
  writeFileSync(path.join(r.dir, WAL_REL), [...bad.slice(0, 2), rec({ f: 'transcripts/a.jsonl', i: a.ino, o: 0, d: 'a1\n' }), ...bad.slice(2)].join(''));
  assert.equal(await replayWal(nodeIo, r.dir, r.log), 1);
  const lines = [1, 2, 4, 5, 6, 7, 8, 9, 10, 11].map((n) => `line ${n} (checksum mismatch)`).join(', ');
  assert.deepEqual(r.errors, [`wal: 12 damaged record(s) in ${WAL_REL} skipped: ${lines}, …; the 1 valid record(s) around them are replayed; an append whose record was damaged is put back only if its file kept it`]);
  const ten = replayDir(bad.slice(0, 10).join(''));
  await replayWal(nodeIo, ten.dir, ten.log);
  assert.equal(ten.errors.length, 1);
  assert.ok(ten.errors[0]?.includes('line 10 (checksum mismatch); the 0 valid'), `ten are all said, with no "…": ${ten.errors[0] ?? ''}`);
  const few = replayDir(`${hex8('x')} {}\n`);
  await replayWal(nodeIo, few.dir, few.log);
  assert.deepEqual(few.errors, [`wal: 1 damaged record(s) in ${WAL_REL} skipped: line 1 (checksum mismatch); the 0 valid record(s) around them are replayed; an append whose record was damaged is put back only if its file kept it`]);
});

test('replayWal: one entry re-appended after foreign bytes is said as one entry', async () => {
  const r = replayDir('');
  const a = transcript(r.dir, 'a', 'foreign\n');
  writeFileSync(path.join(r.dir, WAL_REL), rec({ f: 'transcripts/a.jsonl', i: a.ino, o: 0, d: 'ours\n' }));
  assert.equal(await replayWal(nodeIo, r.dir, r.log), 1);
  assert.equal(readFileSync(a.file, 'utf8'), 'foreign\nours\n');
  assert.deepEqual(r.errors, ['wal: transcripts/a.jsonl holds bytes this server did not write where its records belong (another writer appended after a crash); kept them and re-appended 1 entry after the file\'s end']);
});

test('replayWal: a file that ends before a record\'s offset gets the entry at its end, with no blank line', async () => {
  const r = replayDir('');
  const a = transcript(r.dir, 'a', '');
  writeFileSync(path.join(r.dir, WAL_REL), rec({ f: 'transcripts/a.jsonl', i: a.ino, o: 5, d: 'late\n' }));
  assert.equal(await replayWal(nodeIo, r.dir, r.log), 1);
  assert.equal(readFileSync(a.file, 'utf8'), 'late\n');
});

test('replayWal: later records of a file follow the ones moved past foreign bytes, each once, in order', async () => {
  const r = replayDir('');
  const a = transcript(r.dir, 'a', 'foreign, no newline');
  writeFileSync(path.join(r.dir, WAL_REL), ['one\n', 'two\n', 'three\n'].map((d, i, all) =>
    rec({ f: 'transcripts/a.jsonl', i: a.ino, o: all.slice(0, i).join('').length, d })).join(''));
  assert.equal(await replayWal(nodeIo, r.dir, r.log), 3);
  assert.equal(readFileSync(a.file, 'utf8'), 'foreign, no newline\none\ntwo\nthree\n');
  assert.match(r.errors[0] ?? '', /re-appended 3 entries after the file's end$/);
});

test('replayWal closes every file it opened and the log; a close that fails is the replay\'s error', async () => {
  const fds = readdirSync('/proc/self/fd').length;
  for (let n = 0; n < 10; n++) {
    const r = replayDir('');
    const a = transcript(r.dir, 'a', '');
    const b = transcript(r.dir, 'b', '');
    writeFileSync(path.join(r.dir, WAL_REL), rec({ f: 'transcripts/a.jsonl', i: a.ino, o: 0, d: 'a\n' }) + rec({ f: 'transcripts/b.jsonl', i: b.ino, o: 0, d: 'b\n' }));
    await replayWal(nodeIo, r.dir, r.log);
  }
  assert.ok(readdirSync('/proc/self/fd').length < fds + 10, 'ten replays of two files and a log leak nothing');
  const r = replayDir('');
  const a = transcript(r.dir, 'a', '');
  writeFileSync(path.join(r.dir, WAL_REL), rec({ f: 'transcripts/a.jsonl', i: a.ino, o: 0, d: 'a\n' }));
  const closeFails = closeFailsIo({}, (f) => f === a.file);
  await assert.rejects(() => replayWal(closeFails, r.dir, r.log), storeError('io', [`replay ${WAL_REL}: EIO`], 'EIO'));
  assert.ok(statSync(path.join(r.dir, WAL_REL)).size > 0, 'the log is kept for the next start');
});

test('replayWal: a failure in the middle is an error naming the log; nothing is emptied and the seqs are not handed back', async () => {
  const cases: [string, (file: string) => Partial<Io>, string][] = [
    ['a write', () => ({ write: () => Promise.reject(errno('ENOSPC')) }), 'ENOSPC'],
    ['an open', (file) => ({ open: (f, fl, m) => (f === file ? Promise.reject(errno('EACCES', 'open')) : nodeIo.open(f, fl, m)) }), 'EACCES'],
    ['an inode', () => ({ inode: () => Promise.reject(errno('EIO', 'fstat')) }), 'EIO'],
    ['a sync', () => ({ datasync: () => Promise.reject(errno('EIO', 'fdatasync')) }), 'EIO'],
  ];
  for (const [what, overrides, code] of cases) {
    const r = replayDir('');
    const a = transcript(r.dir, 'a', '');
    const log = rec({ f: 'transcripts/a.jsonl', i: a.ino, o: 0, d: 'a1\n', s: 1 });
    writeFileSync(path.join(r.dir, WAL_REL), log);
    let handed = false;
    await assert.rejects(() => replayWal(withIo(overrides(a.file)), r.dir, r.log, async () => void (handed = true)), storeError('io', [`replay ${WAL_REL}: ${code}`], code), what);
    assert.equal(handed, false, what);
    assert.equal(readFileSync(path.join(r.dir, WAL_REL), 'utf8'), log, what);
  }
});
