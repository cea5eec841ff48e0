// The take-over of the shared side files (.herrscher-state/) by a state file with a folder of its
// own, step by step through the fs seam: marks raised, only metas copied and never over its own,
// the shared log replayed only while no server of state.json holds it, each replace synced, the
// lock given back, every failure named, and a marker so it happens once. side-files.test.ts
// checks the same end to end across a crash.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { HIGH_WATER_REL, HighWater, highWaterRelIn } from '../../src/store/high-water.js';
import type { Io } from '../../src/store/io.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { LEGACY_SIDE, sideOf } from '../../src/store/paths.js';
import { adoptSharedSideFiles } from '../../src/store/side-files.js';
import { Store } from '../../src/store/store.js';
import { storeLog } from '../../src/store/store-log.js';
import { WAL_REL } from '../../src/store/wal-record.js';
import { countingIo, errno, storeError } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { sealLine } from '../../src/store/sealed-line.js';

const SIDE = sideOf('b.json');
const MARKER = path.join(SIDE, 'adopted-shared-side-files');
const nameOf = (rel: string): string => path.basename(rel, '.jsonl');

const walLine = (r: object): string => sealLine(JSON.stringify(r));

/**
 * A dir as an older version left it for b.json: shared marks (s: 7), shared metas (s.json and its
 * copy, plus files that are not metas), and a shared log whose one record says t's seq reached 12
 * (its transcript is gone).
 */
async function sharedDir(): Promise<string> {
  const dir = tempDir();
  const log = storeLog({});
  const marks = await HighWater.load(nodeIo, dir, log, HIGH_WATER_REL);
  marks.raise('s', 7);
  await marks.save();
  const metas = path.join(dir, LEGACY_SIDE, 'transcripts');
  mkdirSync(metas, { recursive: true });
  for (const n of ['s.json', 's.json.copy', 's.summary', 's.json.tmp-1', 'u.jsonl']) writeFileSync(path.join(metas, n), `shared ${n}\n`);
  writeFileSync(path.join(dir, WAL_REL), walLine({ f: 'transcripts/t.jsonl', i: 1, o: 0, d: 'x\n', s: 12 }));
  return dir;
}

interface Run {
  marks: HighWater;
  warnings: string[];
  errors: string[];
}

async function adopt(dir: string, io: Io = nodeIo, sync = true): Promise<Run> {
  const warnings: string[] = [];
  const errors: string[] = [];
  const log = storeLog({ warn: (m) => warnings.push(m), error: (m) => errors.push(m) });
  mkdirSync(path.join(dir, SIDE), { recursive: true, mode: 0o700 }); // as the store's open makes it, before the take-over
  const marks = await HighWater.load(io, dir, log, highWaterRelIn(SIDE));
  await adoptSharedSideFiles(io, dir, SIDE, { marks, nameOf, log, sync });
  return { marks, warnings, errors };
}

/** An Io that records each replace's options by name relative to `dir`. */
function recordingReplaces(dir: string): { io: Io; replaces: Map<string, { mode: number; sync: boolean }> } {
  const replaces = new Map<string, { mode: number; sync: boolean }>();
  const io = withIo({
    writeAtomic: (f, d, o) => {
      replaces.set(path.relative(dir, f), { mode: o.mode, sync: o.sync });
      return nodeIo.writeAtomic(f, d, o);
    },
  });
  return { io, replaces };
}

test('the take-over raises the marks from the shared ones and the shared log, copies only the metas, synced, and leaves a private marker', async () => {
  const dir = await sharedDir();
  const { io, replaces } = recordingReplaces(dir);
  const run = await adopt(dir, io);
  assert.deepEqual([...run.marks.entries()].sort(), [['s', 7], ['t', 12]]);
  const own = path.join(dir, SIDE, 'transcripts');
  assert.equal(readFileSync(path.join(own, 's.json'), 'utf8'), 'shared s.json\n');
  assert.equal(readFileSync(path.join(own, 's.json.copy'), 'utf8'), 'shared s.json.copy\n');
  for (const n of ['s.summary', 's.json.tmp-1', 'u.jsonl']) assert.equal(existsSync(path.join(own, n)), false, `${n} is not a meta`);
  for (const rel of [path.join(SIDE, 'transcripts/s.json'), path.join(SIDE, 'transcripts/s.json.copy'), highWaterRelIn(SIDE), MARKER]) {
    assert.deepEqual(replaces.get(rel), { mode: 0o600, sync: true }, rel);
  }
  assert.equal(statSync(path.join(dir, MARKER)).mode & 0o777, 0o600);
  assert.ok(existsSync(path.join(dir, WAL_REL)) && statSync(path.join(dir, WAL_REL)).size > 0, 'state.json\'s log is left for state.json');
  // The lock of state.json's server was given back: its server can start.
  const server = await Store.open(path.join(dir, 'state.json'));
  await server.close();
  assert.deepEqual(run.warnings, []);
});

test('with durability write the take-over syncs nothing of its own: the metas and the marker are replaced unsynced, their folder is not synced', async () => {
  const dir = await sharedDir();
  const replaces = new Map<string, boolean>();
  const synced: string[] = [];
  const io = withIo({
    writeAtomic: (f, d, o) => {
      replaces.set(path.relative(dir, f), o.sync);
      return nodeIo.writeAtomic(f, d, o);
    },
    syncDir: (d) => {
      synced.push(path.relative(dir, d));
      return nodeIo.syncDir(d);
    },
  });
  await adopt(dir, io, false);
  for (const rel of [path.join(SIDE, 'transcripts/s.json'), path.join(SIDE, 'transcripts/s.json.copy'), MARKER]) assert.equal(replaces.get(rel), false, rel);
  assert.equal(synced.includes(path.join(SIDE, 'transcripts')), false, `synced: ${synced.join(', ')}`);
  assert.equal(readFileSync(path.join(dir, SIDE, 'transcripts', 's.json'), 'utf8'), 'shared s.json\n');
  assert.ok(existsSync(path.join(dir, MARKER)));
});

test('a second take-over does nothing: the marker is there', async () => {
  const dir = await sharedDir();
  await adopt(dir);
  writeFileSync(path.join(dir, LEGACY_SIDE, 'transcripts', 'late.json'), 'late\n');
  const { io, calls } = countingIo();
  const run = await adopt(dir, io);
  assert.deepEqual([calls.readdir, calls.writeAtomic, calls.unlink], [0, 0, 0]);
  assert.equal(existsSync(path.join(dir, SIDE, 'transcripts', 'late.json')), false);
  assert.deepEqual([...run.marks.entries()].sort(), [['s', 7], ['t', 12]]);
});

test('state.json takes over nothing: the shared files are its own', async () => {
  const dir = await sharedDir();
  const { io, calls } = countingIo();
  const log = storeLog({});
  const marks = await HighWater.load(nodeIo, dir, log);
  await adoptSharedSideFiles(io, dir, LEGACY_SIDE, { marks, nameOf, log });
  assert.equal(Object.values(calls).reduce((a, b) => a + b, 0), 0);
  assert.equal(existsSync(path.join(dir, LEGACY_SIDE, 'adopted-shared-side-files')), false);
});

test('a meta the state file already has is kept, not replaced by the shared one', async () => {
  const dir = await sharedDir();
  const own = path.join(dir, SIDE, 'transcripts');
  mkdirSync(own, { recursive: true });
  writeFileSync(path.join(own, 's.json'), 'its own\n');
  await adopt(dir);
  assert.equal(readFileSync(path.join(own, 's.json'), 'utf8'), 'its own\n');
  assert.equal(readFileSync(path.join(own, 's.json.copy'), 'utf8'), 'shared s.json.copy\n');
});

test('while a server of state.json holds its lock, the shared log is not replayed (it was at that server\'s start) and a warning says so', async (t) => {
  const dir = await sharedDir();
  const server = await Store.open(path.join(dir, 'state.json'));
  t.after(() => server.close());
  // That server replayed the log at its start (t's mark is shared now) and writes to it since.
  writeFileSync(path.join(dir, WAL_REL), walLine({ f: 'transcripts/v.jsonl', i: 1, o: 0, d: 'x\n', s: 20 }));
  const run = await adopt(dir);
  assert.deepEqual([...run.marks.entries()].sort(), [['s', 7], ['t', 12]], 'the marks and metas are taken over all the same, not the log\'s');
  assert.equal(existsSync(path.join(dir, SIDE, 'transcripts', 's.json')), true);
  assert.deepEqual(run.warnings, [`${WAL_REL} not replayed for this state file: a server of state.json holds it (it replayed the log at its start)`]);
  assert.equal(existsSync(path.join(dir, MARKER)), true);
});

test('a lock file that cannot be taken for another reason than a holder fails the take-over, and nothing is marked done', async () => {
  const dir = await sharedDir();
  symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, LEGACY_SIDE, 'server.lock'));
  await assert.rejects(() => adopt(dir), storeError('io', ['symbolic link'], 'ELOOP'));
  assert.equal(existsSync(path.join(dir, MARKER)), false);
});

test('each failing step of the take-over is named, and the marker is not left', async () => {
  const cases: [string, Partial<Io>, (err: unknown) => boolean][] = [
    ['listing the shared metas', { readdir: () => Promise.reject(errno('EACCES', 'scandir')) }, storeError('io', ['list .herrscher-state/transcripts: EACCES'], 'EACCES')],
    ['reading a shared meta', { readFile: (f) => (f.endsWith('s.json.copy') ? Promise.reject(errno('EIO', 'read')) : nodeIo.readFile(f)) },
      storeError('io', ['read .herrscher-state/transcripts/s.json.copy: EIO'], 'EIO')],
    ['copying a meta', { writeAtomic: (f, d, o) => (f.endsWith('s.json') ? Promise.reject(errno('ENOSPC')) : nodeIo.writeAtomic(f, d, o)) },
      storeError('io', [`write ${SIDE}/transcripts/s.json: ENOSPC`], 'ENOSPC')],
    ['writing the marker', { writeAtomic: (f, d, o) => (f.endsWith('adopted-shared-side-files') ? Promise.reject(errno('ENOSPC')) : nodeIo.writeAtomic(f, d, o)) },
      storeError('io', [`write ${MARKER}: ENOSPC`], 'ENOSPC')],
    ['looking for the marker', { lstat: (f) => (f.endsWith('adopted-shared-side-files') ? Promise.reject(errno('EACCES', 'lstat')) : nodeIo.lstat(f)) },
      (err) => (err as NodeJS.ErrnoException).code === 'EACCES'],
  ];
  for (const [what, overrides, check] of cases) {
    const dir = await sharedDir();
    await assert.rejects(() => adopt(dir, withIo(overrides)), check, what);
    assert.equal(existsSync(path.join(dir, MARKER)), false, what);
  }
});

test('a shared meta gone between the listing and its read is skipped; no shared metas at all is fine', async () => {
  const dir = await sharedDir();
  const vanished = withIo({ readFile: (f) => (f.endsWith('s.json.copy') ? Promise.reject(errno('ENOENT', 'open')) : nodeIo.readFile(f)) });
  await adopt(dir, vanished);
  assert.equal(existsSync(path.join(dir, SIDE, 'transcripts', 's.json')), true);
  assert.equal(existsSync(path.join(dir, SIDE, 'transcripts', 's.json.copy')), false);
  const bare = tempDir();
  mkdirSync(path.join(bare, SIDE), { recursive: true }); // the store makes its side folder first
  const run = await adopt(bare);
  assert.deepEqual([...run.marks.entries()], []);
  assert.equal(existsSync(path.join(bare, MARKER)), true);
});
