// openingIo (open-io.ts): while a store opens, its metadata calls and its reads of small files are
// made on the main thread with the same answers and errors as the base Io's; a big file, and every
// call once the open has ended, go to the base Io.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { openingIo, SMALL_READ_BYTES } from '../../src/store/open-io.js';
import { countingIo } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

test('while opening, the metadata calls and small reads do not reach the base Io and answer as it does', async () => {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'small'), 'abc');
  const { io: base, calls } = countingIo();
  const { io } = openingIo(base);
  await io.mkdir(path.join(dir, 'a', 'b'), 0o700);
  assert.equal(await io.realpath(path.join(dir, 'a', '..', 'small')), await base.realpath(path.join(dir, 'small')));
  assert.ok((await io.lstat(path.join(dir, 'a', 'b'))).isDirectory());
  assert.deepEqual((await io.readdir(dir)).sort(), ['a', 'small']);
  assert.equal((await io.readFile(path.join(dir, 'small'))).toString(), 'abc');
  assert.deepEqual([calls.mkdir, calls.realpath, calls.lstat, calls.readdir, calls.readFile], [0, 1, 0, 0, 0]);
  // The errors are the same as the base Io's: a missing file, a link at the name, a folder.
  for (const [name, call] of [
    ['missing', (i: typeof io) => i.readFile(path.join(dir, 'nothing'))],
    ['missing lstat', (i: typeof io) => i.lstat(path.join(dir, 'nothing'))],
    ['a folder', (i: typeof io) => i.readFile(path.join(dir, 'a'))],
  ] as const) {
    const want = await call(base).then(() => undefined, (e: NodeJS.ErrnoException) => e.code);
    const got = await call(io).then(() => undefined, (e: NodeJS.ErrnoException) => e.code);
    assert.ok(want !== undefined, name);
    assert.equal(got, want, name);
  }
  symlinkSync(path.join(dir, 'small'), path.join(dir, 'link'));
  await assert.rejects(io.readFile(path.join(dir, 'link')), (e: NodeJS.ErrnoException) => e.code === 'ELOOP' && /symbolic link is in the way/.test(e.message));
});

test('a FIFO where a file belongs is refused at once, not waited on', async () => {
  const dir = tempDir();
  execFileSync('mkfifo', [path.join(dir, 'fifo')]);
  const { io } = openingIo(countingIo().io);
  await assert.rejects(io.readFile(path.join(dir, 'fifo')), (e: NodeJS.ErrnoException) => e.code === 'EFTYPE');
});

test('a file bigger than SMALL_READ_BYTES, and every call once the open ended, go to the base Io', async () => {
  const dir = tempDir();
  const big = Buffer.alloc(SMALL_READ_BYTES + 1, 'x');
  writeFileSync(path.join(dir, 'big'), big);
  const { io: base, calls } = countingIo();
  const opening = openingIo(base);
  assert.deepEqual(await opening.io.readFile(path.join(dir, 'big')), big);
  assert.equal(calls.readFile, 1);
  opening.end();
  mkdirSync(path.join(dir, 'd'));
  await opening.io.lstat(path.join(dir, 'd'));
  await opening.io.readdir(dir);
  await opening.io.readFile(path.join(dir, 'big'));
  await opening.io.mkdir(path.join(dir, 'e'), 0o700);
  assert.deepEqual([calls.lstat, calls.readdir, calls.readFile, calls.mkdir], [1, 1, 2, 1]);
});
