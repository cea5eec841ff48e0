// Io.writeSynced, a durable write (a write-ahead record, a journal line in sync mode): answered
// only after its fdatasync, on the writer thread when it is idle and through the thread pool when
// it is not; a seam that replaces write or datasync sees every durable write through them.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { errnoOf } from '../../src/common/errno.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { tempDir } from '../helpers/temp-dir.js';

/** A FIFO takes bytes but cannot be fdatasync'ed (EINVAL): a caller that hears EINVAL was synced. */
async function fifoIn(dir: string): Promise<fs.FileHandle> {
  const fifo = path.join(dir, `fifo${Math.random().toString(36).slice(2)}`);
  execFileSync('mkfifo', [fifo]);
  return fs.open(fifo, 'r+');
}

test('a durable write lands and is synced, whether the writer thread is idle or busy', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const fh = await fs.open(path.join(dir, 'log'), 'a');
  const pipe = await fifoIn(dir);
  try {
    assert.equal(await nodeIo.writeSynced(fh, Buffer.from('one\n')), 4);
    // Idle: the write and its sync in one hand-off; the sync's failure reaches the caller.
    await assert.rejects(nodeIo.writeSynced(pipe, Buffer.from('a\n')), (e: NodeJS.ErrnoException) => errnoOf(e) === 'EINVAL' && e.syscall === 'fdatasync');
    // Busy (a plain write posted first): the sync takes its own hop, and still happens.
    const plain = nodeIo.write(fh, Buffer.from('two\n'));
    const synced = nodeIo.writeSynced(pipe, Buffer.from('b\n'));
    const durable = nodeIo.writeSynced(fh, Buffer.from('three\n'));
    assert.equal(await plain, 4);
    await assert.rejects(synced, (e: NodeJS.ErrnoException) => errnoOf(e) === 'EINVAL' && e.syscall === 'fdatasync');
    assert.equal(await durable, 6);
    assert.equal(await fs.readFile(path.join(dir, 'log'), 'utf8'), 'one\ntwo\nthree\n');
  } finally {
    await fh.close();
    await pipe.close();
  }
});

test('a seam that replaces write or datasync makes writeSynced of them: a failure injected there reaches it', async () => {
  const dir = tempDir();
  const fh = await fs.open(path.join(dir, 'log'), 'a');
  try {
    const calls: string[] = [];
    const syncFails = withIo({
      write: async (h, buf) => {
        calls.push('write');
        return nodeIo.write(h, buf);
      },
      datasync: async () => {
        calls.push('datasync');
        throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO', syscall: 'fdatasync' });
      },
    });
    await assert.rejects(syncFails.writeSynced(fh, Buffer.from('x\n')), (e) => errnoOf(e) === 'EIO');
    assert.deepEqual(calls, ['write', 'datasync']);
    calls.length = 0;
    const writeFails = withIo({
      write: async () => {
        calls.push('write');
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
      },
      datasync: async () => void calls.push('datasync'),
    });
    await assert.rejects(writeFails.writeSynced(fh, Buffer.from('y\n')), (e) => errnoOf(e) === 'ENOSPC');
    assert.deepEqual(calls, ['write'], 'no sync after a failed write');
    // A seam that replaces neither keeps the real one.
    assert.equal(withIo({}).writeSynced, nodeIo.writeSynced);
    assert.equal(await fs.readFile(path.join(dir, 'log'), 'utf8'), 'x\n');
  } finally {
    await fh.close();
  }
});
