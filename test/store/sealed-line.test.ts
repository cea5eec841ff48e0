// The sealed line (src/store/sealed-line.ts): the one envelope of the store's own files. Checked
// against fixed bytes and against a reader written here from the format's description alone, and
// through the store: a line of a newer version than the build reads stops the start (or the
// read) naming the file and the version, and changes nothing on disk; it is never skipped as damage.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { NewerFormatError, SEALED_VERSION, sealLine, unsealLine } from '../../src/store/sealed-line.js';
import { StoreError } from '../../src/store/store-error.js';
import { formatProblem, verifyStateDir } from '../../src/store/verify.js';
import { WAL_REL } from '../../src/store/wal-record.js';
import { newSession, openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

/** The format as docs/durability.md states it, read without the module under test. */
function independentRead(line: string): { version: number; json: string } | undefined {
  const m = /^([0-9a-f]{8}) (.*)\n$/s.exec(line);
  if (!m) return undefined;
  const [, sum, body] = m as unknown as [string, string, string];
  if (crc32(body) !== Number.parseInt(sum, 16)) return undefined;
  const tag = /^v(\d+) (.*)$/s.exec(body);
  return tag ? { version: Number(tag[1]), json: tag[2] as string } : { version: 1, json: body };
}

test('fixed bytes: version 1 is "<crc32> <json>\\n" (the unversioned lines), a later one "<crc32> v<N> <json>\\n"', () => {
  assert.equal(SEALED_VERSION, 1, 'this build writes version 1: a change here needs a CHANGELOG entry and a fixture of the old format');
  assert.equal(sealLine('{"s":5}'), '2857ad49 {"s":5}\n');
  assert.equal(sealLine('{"s":5}', 2), '5457659c v2 {"s":5}\n');
  assert.deepEqual(unsealLine('2857ad49 {"s":5}'), { version: 1, value: { s: 5 } });
  assert.deepEqual(unsealLine('5457659c v2 {"s":5}'), { newer: 2 });
});

const jsonObject = fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.boolean(), fc.constant(null)))
  .map((o) => JSON.stringify(o));

test('every sealed line reads back, by the module and by an independent reader; a newer version is never a value', () => {
  fc.assert(fc.property(jsonObject, fc.integer({ min: 1, max: 50 }), (json, version) => {
    const line = sealLine(json, version);
    assert.deepEqual(independentRead(line), { version, json });
    const got = unsealLine(line.slice(0, -1));
    if (version <= SEALED_VERSION) assert.deepEqual(got, { version, value: JSON.parse(json) });
    else assert.deepEqual(got, { newer: version });
  }));
});

test('one flipped bit anywhere in a line (its version tag included) is damage, never another version nor a value', () => {
  fc.assert(fc.property(jsonObject, fc.integer({ min: 1, max: 3 }), fc.nat(), fc.integer({ min: 0, max: 6 }), (json, version, at, bit) => {
    const line = Buffer.from(sealLine(json, version).slice(0, -1));
    const i = at % line.length;
    line.writeUInt8(line.readUInt8(i) ^ (1 << bit), i);
    assert.ok('damaged' in unsealLine(line.toString('latin1')), `flip of bit ${bit} at ${i} in ${line.toString('latin1')}`);
  }));
});

/** A state dir whose store appended to `s` and was dropped without a close: its log holds records. */
async function crashed(): Promise<string> {
  const dir = tempDir();
  const store = await openIn(dir, { lock: false });
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', { ts: 't1', role: 'user', text: 'a' });
  return dir;
}

/** Every file under `dir` with its bytes. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.set(path.join(e.parentPath, e.name), readFileSync(path.join(e.parentPath, e.name), 'hex'));
  }
  return out;
}

function assertNewer(err: unknown, file: string, version: number): true {
  assert.ok(err instanceof NewerFormatError && err instanceof StoreError, String(err));
  assert.match(err.message, new RegExp(`${file.replaceAll('.', '\\.')}.* format version ${version}, newer than this build reads \\(up to 1\\)`));
  return true;
}

test('a write-ahead log with a line of a newer version stops the start, naming the log, the line and the version; nothing changes', async () => {
  const dir = await crashed();
  const wal = path.join(dir, WAL_REL);
  writeFileSync(wal, readFileSync(wal, 'utf8') + sealLine('{"f":"transcripts/s.jsonl","future":true}', 2));
  const before = snapshot(dir);
  const errors: string[] = [];
  await assert.rejects(openIn(dir, { error: (m) => errors.push(m) }), (err) => assertNewer(err, `${WAL_REL} line 2`, 2));
  assert.deepEqual(errors.filter((e) => /damaged/.test(e)), [], 'not reported as damaged');
  // The lock and side folder aside (made and released by the start), every file is as it was.
  const after = snapshot(dir);
  for (const [f, bytes] of before) assert.equal(after.get(f), bytes, `${path.relative(dir, f)} unchanged`);
});

test('high-water.json of a newer version stops the start, naming the file and the version', async () => {
  const dir = await crashed();
  const marks = path.join(dir, '.herrscher-state/high-water.json');
  writeFileSync(marks, sealLine('{"s":9}', 3));
  await assert.rejects(openIn(dir), (err) => assertNewer(err, '.herrscher-state/high-water.json', 3));
  assert.equal(readFileSync(marks, 'utf8'), sealLine('{"s":9}', 3), 'left as it was');
});

test('a transcript meta of a newer version fails the reads of that transcript, naming the file; it is not rebuilt nor renumbered', async () => {
  const dir = tempDir();
  const store = await openIn(dir);
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', { ts: 't1', role: 'user', text: 'a' });
  await store.close();
  const meta = path.join(dir, '.herrscher-state/transcripts/s.json');
  mkdirSync(path.dirname(meta), { recursive: true });
  const future = sealLine('{"ino":1,"firstSeq":7}', 2);
  writeFileSync(meta, future);
  writeFileSync(`${meta}.copy`, future);
  const again = await openIn(dir);
  try {
    await assert.rejects(again.readTranscriptPage('s', {}), (err) => assertNewer(err, '.herrscher-state/transcripts/s.json', 2));
    await assert.rejects(again.appendTranscript('s', { ts: 't2', role: 'user', text: 'b' }), NewerFormatError);
  } finally {
    await again.close();
  }
  assert.equal(readFileSync(meta, 'utf8'), future);
  assert.equal(readFileSync(`${meta}.copy`, 'utf8'), future);
});

test('a summary of a newer version is only a shortcut not taken: the transcript is scanned and reads right', async () => {
  const dir = tempDir();
  const store = await openIn(dir);
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', { ts: 't1', role: 'user', text: 'a' });
  await store.close();
  const summary = path.join(dir, '.herrscher-state/transcripts/s.summary');
  mkdirSync(path.dirname(summary), { recursive: true });
  writeFileSync(summary, sealLine('{"count":99}', 2));
  const again = await openIn(dir);
  try {
    assert.deepEqual((await again.readTranscriptPage('s', {})).entries.map((e) => e.ts), ['t1']);
    assert.equal((await again.transcriptUsage('s')).entries, 1);
  } finally {
    await again.close();
  }
});

test('verify names a line of a newer version in the log and in the marks (what a start of this build refuses)', async () => {
  const dir = await crashed();
  const wal = path.join(dir, WAL_REL);
  writeFileSync(wal, readFileSync(wal, 'utf8') + sealLine('{"future":true}', 2));
  writeFileSync(path.join(dir, '.herrscher-state/high-water.json'), sealLine('{"s":9}', 3));
  const got = (await verifyStateDir(dir)).problems.map(formatProblem);
  assert.ok(got.some((p) => p.startsWith(`${WAL_REL}:2: `) && p.includes('format version 2, newer than this build reads')), got.join('\n'));
  assert.ok(got.some((p) => p.startsWith('.herrscher-state/high-water.json: ') && p.includes('format version 3')), got.join('\n'));
});
