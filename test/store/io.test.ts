// The store's fs seam itself (nodeIo), call by call: no open follows a link at its name (and says
// so plainly), only a regular file is read (a FIFO planted at a name fails at once), a failing
// fdatasync reaches its caller, stats and inodes are the file's, and no call leaks a descriptor.
// write-atomic.test.ts covers the whole-file replace.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { constants as C, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { linkRefused, noFollow, nodeIo, notRegularFile, openNoFollow } from '../../src/store/io.js';
import { tempDir } from '../helpers/temp-dir.js';

const openFds = (): number => readdirSync('/proc/self/fd').length;
/** 20 calls leaking one descriptor each would add 20; the process opens and closes a few of its own meanwhile. */
const noLeak = (before: number): void => assert.ok(openFds() < before + 10, `descriptors: ${before} before, ${openFds()} after`);

/** The errno-shaped error `run` rejects with. */
async function failure(run: () => Promise<unknown>): Promise<NodeJS.ErrnoException> {
  try {
    await run();
  } catch (err) {
    return err as NodeJS.ErrnoException;
  }
  assert.fail('expected a rejection');
}

test('noFollow adds O_NOFOLLOW to fs\'s letters and to numbers, and refuses letters it does not know', () => {
  assert.equal(noFollow('r'), C.O_RDONLY | C.O_NOFOLLOW);
  assert.equal(noFollow('ax'), C.O_WRONLY | C.O_APPEND | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW);
  assert.equal(noFollow(C.O_RDWR), C.O_RDWR | C.O_NOFOLLOW);
  assert.throws(() => noFollow('rw?'), { name: 'TypeError', message: 'unknown open flags "rw?"' });
});

test('an open through a link fails with ELOOP and a message that says a link is in the way; other errors pass as they are', async () => {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'target'), 'x');
  symlinkSync(path.join(dir, 'target'), path.join(dir, 'link'));
  const err = await failure(() => openNoFollow(path.join(dir, 'link'), 'r'));
  assert.deepEqual({ code: err.code, syscall: err.syscall, message: err.message },
    { code: 'ELOOP', syscall: 'open', message: 'ELOOP: a symbolic link is in the way (the store follows none inside the state dir)' });
  const same = linkRefused();
  assert.deepEqual([same.code, same.syscall, same.message], [err.code, err.syscall, err.message]);
  const missing = await failure(() => openNoFollow(path.join(dir, 'none'), 'r'));
  assert.equal(missing.code, 'ENOENT');
  assert.match(missing.message, /^ENOENT: no such file or directory/);
});

test('what is not a regular file is named, with EISDIR for a folder and EFTYPE for the rest', async (t) => {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'folder'));
  execFileSync('mkfifo', [path.join(dir, 'fifo')]);
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(path.join(dir, 'sock'), resolve));
  t.after(() => server.close());
  const cases: [string, string, string][] = [
    ['folder', 'EISDIR', 'a directory'],
    ['fifo', 'EFTYPE', 'a FIFO'],
    ['sock', 'EFTYPE', 'a socket'],
  ];
  for (const [name, code, what] of cases) {
    const err = notRegularFile(statSync(path.join(dir, name)));
    assert.deepEqual([err.code, err.syscall, err.message], [code, 'open', `${code}: ${what} is where a regular file belongs`], name);
  }
  const dev = notRegularFile(statSync('/dev/null'));
  assert.deepEqual([dev.code, dev.message], ['EFTYPE', 'EFTYPE: a device or other special file is where a regular file belongs']);
});

test('readFile reads only a regular file: a FIFO or a folder at the name fails at once, and no descriptor is kept', async () => {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'file'), 'bytes');
  mkdirSync(path.join(dir, 'folder'));
  execFileSync('mkfifo', [path.join(dir, 'fifo')]);
  const fds = openFds();
  for (let i = 0; i < 20; i++) {
    assert.equal((await nodeIo.readFile(path.join(dir, 'file'))).toString(), 'bytes');
    const fifo = await failure(() => nodeIo.readFile(path.join(dir, 'fifo')));
    assert.deepEqual([fifo.code, fifo.message], ['EFTYPE', 'EFTYPE: a FIFO is where a regular file belongs']);
    const folder = await failure(() => nodeIo.readFile(path.join(dir, 'folder')));
    assert.deepEqual([folder.code, folder.message], ['EISDIR', 'EISDIR: a directory is where a regular file belongs']);
  }
  noLeak(fds);
});

test('syncDir syncs a folder and closes it; a folder that is not there is an error', async () => {
  const dir = tempDir();
  const fds = openFds();
  for (let i = 0; i < 20; i++) await nodeIo.syncDir(dir);
  noLeak(fds);
  assert.equal((await failure(() => nodeIo.syncDir(path.join(dir, 'none')))).code, 'ENOENT');
});

test('datasync, size, inode and lstatNow are the file\'s own; a failing datasync reaches the caller', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'f');
  writeFileSync(file, 'abc');
  const fh = await nodeIo.open(file, 'r+');
  try {
    await nodeIo.datasync(fh);
    assert.equal(await nodeIo.size(fh), 3);
    assert.equal(await nodeIo.inode(fh), statSync(file).ino);
  } finally {
    await fh.close();
  }
  assert.equal((await failure(() => nodeIo.datasync(fh))).code, 'EBADF', 'a closed handle cannot be synced');
  assert.equal(nodeIo.lstatNow(file)?.ino, statSync(file).ino);
  assert.equal(nodeIo.lstatNow(path.join(dir, 'none')), undefined);
});

test('write writes every byte, small (batched on the writer thread) or big (alone)', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'f');
  const fh = await nodeIo.open(file, 'a', 0o600);
  try {
    const small = Buffer.from('small\n');
    const big = Buffer.alloc(300 * 1024, 'b');
    assert.equal(await nodeIo.write(fh, small), small.length);
    assert.equal(await nodeIo.write(fh, big), big.length);
    assert.equal(statSync(file).size, small.length + big.length);
  } finally {
    await fh.close();
  }
});
