// nodeIo.writeAtomic, the store's whole-file replace (write-file-atomic behind the store's
// checks): a link at the target is replaced, never written through; a disk that fills in the middle
// of the write leaves the old file whole (write-file-atomic alone would rename a short file into
// place: it does not check write(2)'s count).
import assert from 'node:assert/strict';
import { closeSync, existsSync, fstatSync, lstatSync, openSync, readFileSync, readdirSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo } from '../../src/store/io.js';
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
