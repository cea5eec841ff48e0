// nodeIo.writeAtomic, the store's whole-file replace (write-file-atomic behind the store's
// checks): a link at the target is replaced, never written through; a disk that fills in the middle
// of the write leaves the old file whole (write-file-atomic alone would rename a short file into
// place: it does not check write(2)'s count); something at its temp name when the store checks
// it gets none of the data.
import assert from 'node:assert/strict';
import { closeSync, existsSync, fstatSync, linkSync, lstatSync, openSync, readFileSync, readdirSync, statSync, symlinkSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo } from '../../src/store/io.js';
import type { ReplaceOps } from '../../src/store/writer-worker.js';
import { fsReplaceOps, replaceFile } from '../../src/store/writer-worker.js';
import { tempDir } from '../helpers/temp-dir.js';
import { fill, mountTmpfs, unmount } from '../helpers/tmpfs.js';

test('a link at the target is replaced by the file, as Go replaces it, and its target is left alone', async () => {
  const dir = tempDir();
  const outside = path.join(tempDir(), 'victim');
  writeFileSync(outside, 'untouched');
  symlinkSync(outside, path.join(dir, 'state.json'));
  await nodeIo.writeAtomic(path.join(dir, 'state.json'), 'new', { mode: 0o600, sync: true });
  assert.equal(lstatSync(path.join(dir, 'state.json')).isSymbolicLink(), false);
  assert.equal(readFileSync(path.join(dir, 'state.json'), 'utf8'), 'new');
  assert.equal(readFileSync(outside, 'utf8'), 'untouched');
  assert.deepEqual(readdirSync(dir), ['state.json'], 'no temp file left');
});

test('the file is replaced whole with the mode asked for, and no temp file is left', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'state.json');
  writeFileSync(file, 'old', { mode: 0o644 });
  await nodeIo.writeAtomic(file, Buffer.from('x'.repeat(100_000)), { mode: 0o600, sync: false });
  assert.equal(readFileSync(file, 'utf8'), 'x'.repeat(100_000));
  const fd = openSync(file, 'r');
  try {
    assert.equal(fstatSync(fd).mode & 0o777, 0o600);
  } finally {
    closeSync(fd);
  }
  assert.deepEqual(readdirSync(dir), ['state.json']);
});

test('a disk that fills in the middle of the write fails it with ENOSPC and leaves the old file whole', async (t) => {
  const mounted = mountTmpfs('64k');
  if ('skip' in mounted) return t.skip(mounted.skip);
  const dir = mounted.dir;
  t.after(() => unmount(dir));
  const file = path.join(dir, 'state.json');
  writeFileSync(file, 'the old document');
  // Fill the disk to the byte, then free exactly one page: the new file's first page fits, its second does not.
  const filler = fill(dir);
  truncateSync(filler, Math.max(0, statSync(filler).size - 4096));
  await assert.rejects(nodeIo.writeAtomic(file, Buffer.alloc(3 * 4096, 0x61), { mode: 0o600, sync: true }), (err: NodeJS.ErrnoException) => err.code === 'ENOSPC');
  assert.equal(readFileSync(file, 'utf8'), 'the old document');
  assert.deepEqual(readdirSync(dir).sort(), ['filler', 'state.json'], 'no temp file left');
  assert.ok(existsSync(filler));
});

// write-file-atomic opens its temp name with 'w' (no O_EXCL, links followed). Only the state
// dir's owner can plant anything there (the dir must be private); if something is there anyway
// when the store checks the temp file, none of the data goes into it: the replace fails and the
// file it replaces is left whole.
for (const planted of ['a symbolic link', 'a hard link'] as const) {
  test(`${planted} at write-file-atomic's temp name gets none of the data, and the replace fails`, () => {
    const dir = tempDir();
    const file = path.join(dir, 'state.json');
    writeFileSync(file, 'the old document');
    const victim = path.join(tempDir(), 'victim');
    writeFileSync(victim, 'not ours to write');
    let tempName = '';
    // The temp file write-file-atomic created is swapped for the link before the store's check runs.
    const ops: ReplaceOps = {
      ...fsReplaceOps,
      writeFileAtomic: (f, data, o) => fsReplaceOps.writeFileAtomic(f, data, {
        ...o,
        tmpfileCreated: (tmp) => {
          tempName = tmp;
          unlinkSync(tmp);
          if (planted === 'a symbolic link') symlinkSync(victim, tmp);
          else linkSync(victim, tmp);
          o.tmpfileCreated(tmp);
        },
      }),
    };
    assert.throws(() => replaceFile(file, Buffer.from('the new document'), { mode: 0o600, sync: true }, ops), (err: NodeJS.ErrnoException) =>
      planted === 'a symbolic link' ? err.code === 'ELOOP' : err.code === 'EEXIST' && /not a fresh file of ours/.test(err.message));
    assert.ok(tempName.startsWith(`${file}.`), 'write-file-atomic made its temp file');
    assert.equal(readFileSync(file, 'utf8'), 'the old document');
    assert.equal(readFileSync(victim, 'utf8'), 'not ours to write');
    assert.deepEqual(readdirSync(dir), ['state.json'], 'the planted name is removed with the temp file');
  });
}
