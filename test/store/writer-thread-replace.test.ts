// The writer thread's replaces (writer-thread.ts, replace): each whole-file replace is one hand-off, answered with
// the stamp of the file it wrote; replaces in flight together all land, each answered with its
// own outcome; a failure names its errno and leaves no temp file.
import assert from 'node:assert/strict';
import { closeSync, openSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { LineNotWritten } from '../../src/store/writer-thread-jobs.js';
import { WriterThread } from '../../src/store/writer-thread.js';
import { tempDir } from '../helpers/temp-dir.js';

test('replaces in flight together each land whole, answered with the stamp of their file', async () => {
  const dir = tempDir();
  const thread = new WriterThread();
  const files = Array.from({ length: 20 }, (_, i) => path.join(dir, `f${i % 5}.json`));
  const stamps = await Promise.all(files.map((f, i) => thread.replace(f, `version ${i} of ${path.basename(f)}`, { mode: 0o600, sync: false })));
  for (let k = 0; k < 5; k++) {
    const f = path.join(dir, `f${k}.json`);
    // Posted in order, answered in order: the last replace of each file is what it holds.
    assert.equal(readFileSync(f, 'utf8'), `version ${15 + k} of f${k}.json`);
    const st = statSync(f);
    assert.deepEqual(stamps[15 + k], { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs });
    assert.equal(st.mode & 0o777, 0o600);
  }
  assert.deepEqual(readdirSync(dir).sort(), ['f0.json', 'f1.json', 'f2.json', 'f3.json', 'f4.json'], 'no temp file left');
});

test('a replace that fails rejects with its errno, the others still land', async () => {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'plain'), 'a file, not a folder');
  const thread = new WriterThread();
  const [bad, good] = await Promise.allSettled([
    thread.replace(path.join(dir, 'plain', 'state.json'), 'x', { mode: 0o600, sync: true }),
    thread.replace(path.join(dir, 'state.json'), 'kept', { mode: 0o600, sync: true }),
  ]);
  assert.equal(bad.status, 'rejected');
  assert.equal((bad as PromiseRejectedResult).reason.code, 'ENOTDIR');
  assert.equal(good.status, 'fulfilled');
  assert.equal(readFileSync(path.join(dir, 'state.json'), 'utf8'), 'kept');
  await assert.rejects(thread.replace(path.join(dir, 'gone', 'state.json'), 'x', { mode: 0o600, sync: false }),
    (err: NodeJS.ErrnoException) => err.code === 'ENOENT');
  assert.deepEqual(readdirSync(dir).sort(), ['plain', 'state.json']);
});

test('a link at the target is replaced by the file, never written through', async () => {
  const dir = tempDir();
  const victim = path.join(tempDir(), 'victim');
  writeFileSync(victim, 'untouched');
  // A link at the target itself is replaced (rename), not followed.
  symlinkSync(victim, path.join(dir, 'state.json'));
  await new WriterThread().replace(path.join(dir, 'state.json'), 'new', { mode: 0o600, sync: false });
  assert.equal(readFileSync(path.join(dir, 'state.json'), 'utf8'), 'new');
  assert.equal(readFileSync(victim, 'utf8'), 'untouched');
});

test('a replace larger than any before it lands whole (the shared region grows), a smaller one after it holds only its own bytes', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'state.json');
  const thread = new WriterThread();
  // Sizes across the region's first size (4 096 bytes) and its next powers of two, then small again.
  for (const [i, size] of [10, 4096, 4097, 70_000, 1_500_000, 20].entries()) {
    const data = Buffer.alloc(size, String.fromCharCode(97 + i));
    const stamp = await thread.replace(file, data, { mode: 0o600, sync: false });
    const back = readFileSync(file);
    assert.equal(back.length, size, `replace ${i}: ${size} bytes`);
    assert.ok(back.equals(data), `replace ${i}: its own bytes`);
    assert.equal(stamp.size, size);
  }
});

test('a replace with a line appends the line first, in the same hand-off; a line that fails rejects with LineNotWritten and replaces nothing', async () => {
  const dir = tempDir();
  const thread = new WriterThread();
  const log = path.join(dir, 'keys.log');
  writeFileSync(log, 'first\n');
  const file = path.join(dir, 'state.json');
  writeFileSync(file, 'before');
  const fd = openSync(log, 'a');
  const stamp = await thread.replace(file, 'after', { mode: 0o600, sync: true }, { fd, buf: Buffer.from('second\n'), datasync: true });
  assert.equal(readFileSync(log, 'utf8'), 'first\nsecond\n');
  assert.equal(readFileSync(file, 'utf8'), 'after');
  assert.equal(stamp.size, 5);
  closeSync(fd);
  // A descriptor open for reading only: the line's write fails, so the file keeps what it held.
  const readOnly = openSync(log, 'r');
  await assert.rejects(thread.replace(file, 'never', { mode: 0o600, sync: false }, { fd: readOnly, buf: Buffer.from('third\n'), datasync: false }),
    (err: Error) => err instanceof LineNotWritten && (err.cause as NodeJS.ErrnoException).code === 'EBADF');
  closeSync(readOnly);
  assert.equal(readFileSync(file, 'utf8'), 'after');
  assert.equal(readFileSync(log, 'utf8'), 'first\nsecond\n');
  assert.deepEqual(readdirSync(dir).sort(), ['keys.log', 'state.json'], 'no temp file left');
});

test('a replace given in pieces lands as their bytes in order, after a line when it has one', async () => {
  const dir = tempDir();
  const thread = new WriterThread();
  const file = path.join(dir, 'state.json');
  const pieces = [Buffer.from('{\n  "sessions": ['), Buffer.from('{"a":1}'), Buffer.from(',\n'), Buffer.from('{"b":2}'), Buffer.from(']\n}')];
  const stamp = await thread.replace(file, pieces, { mode: 0o600, sync: false });
  assert.equal(readFileSync(file, 'utf8'), Buffer.concat(pieces).toString('utf8'));
  assert.equal(stamp.size, Buffer.concat(pieces).length);
  const log = path.join(dir, 'keys.log');
  const fd = openSync(log, 'a');
  await thread.replace(file, pieces.slice(1, 2), { mode: 0o600, sync: false }, { fd, buf: Buffer.from('line\n'), datasync: false });
  closeSync(fd);
  assert.equal(readFileSync(file, 'utf8'), '{"a":1}', 'the line\'s bytes are not part of the file');
  assert.equal(readFileSync(log, 'utf8'), 'line\n');
});
