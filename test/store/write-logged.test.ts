// Io.writeLogged, the write-ahead log's batch with the lines its records are about: each line
// goes to its file, then the records of the lines written go to the log, then the log is synced;
// a line that fails leaves its record out and is that entry's answer. The same whether the writer
// thread is idle (one hand-off) or busy (the calls one after the other), and a seam that replaces
// write, datasync or writeSynced sees every one of its writes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { errnoOf } from '../../src/common/errno.js';
import type { Io } from '../../src/store/io.js';
import { LineNotWritten, nodeIo, withIo } from '../../src/store/io.js';
import { errno } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

interface Files {
  dir: string;
  a: fs.FileHandle;
  b: fs.FileHandle;
  readOnly: fs.FileHandle;
  log: fs.FileHandle;
  close(): Promise<void>;
}

async function files(): Promise<Files> {
  const dir = tempDir();
  const a = await fs.open(path.join(dir, 'a'), 'a');
  const b = await fs.open(path.join(dir, 'b'), 'a');
  const readOnly = await fs.open(path.join(dir, 'b'), 'r');
  const log = await fs.open(path.join(dir, 'log'), 'a');
  return { dir, a, b, readOnly, log, close: async () => void (await Promise.all([a, b, readOnly, log].map((fh) => fh.close()))) };
}

const read = (f: Files, name: string): Promise<string> => fs.readFile(path.join(f.dir, name), 'utf8');

/** Three entries: a line that lands, a line that fails (a read-only handle), a record without a line. */
async function threeEntries(io: Io, f: Files): Promise<(LineNotWritten | undefined)[]> {
  return io.writeLogged(f.log, [
    { line: { fh: f.a, buf: Buffer.from('line a\n') }, record: Buffer.from('record a\n') },
    { line: { fh: f.readOnly, buf: Buffer.from('line b\n') }, record: Buffer.from('record b\n') },
    { record: Buffer.from('record c\n') },
  ]);
}

test('a line that fails leaves its record out and is its entry\'s answer; the others land, records after their lines', async () => {
  for (const busy of [false, true]) {
    const f = await files();
    try {
      // Busy: a write out on the writer thread sends the batch as its calls, one after the other.
      const before = busy ? nodeIo.write(f.b, Buffer.from('')) : undefined;
      const got = await threeEntries(nodeIo, f);
      await before;
      assert.equal(got[0], undefined, `busy ${busy}`);
      assert.ok(got[1] instanceof LineNotWritten, `busy ${busy}: ${String(got[1])}`);
      assert.equal(errnoOf(got[1]?.cause), 'EBADF');
      assert.equal(got[2], undefined);
      assert.equal(await read(f, 'a'), 'line a\n');
      assert.equal(await read(f, 'b'), '');
      assert.equal(await read(f, 'log'), 'record a\nrecord c\n');
    } finally {
      await f.close();
    }
  }
});

test('the log\'s sync failing rejects the batch; with every line failed the log is as it was and the lines\' failures are the answer', async () => {
  const f = await files();
  // fdatasync of a FIFO fails (EINVAL) after its write went through.
  const fifo = path.join(f.dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const pipe = await fs.open(fifo, 'r+');
  try {
    await assert.rejects(nodeIo.writeLogged(pipe, [{ line: { fh: f.a, buf: Buffer.from('x\n') }, record: Buffer.from('r\n') }]),
      (e: NodeJS.ErrnoException) => errnoOf(e) === 'EINVAL' && e.syscall === 'fdatasync');
    const got = await nodeIo.writeLogged(pipe, [{ line: { fh: f.readOnly, buf: Buffer.from('y\n') }, record: Buffer.from('never\n') }]);
    assert.ok(got[0] instanceof LineNotWritten);
    assert.equal(await read(f, 'a'), 'x\n');
    const buf = Buffer.alloc(64);
    assert.equal(buf.toString('utf8', 0, (await pipe.read(buf, 0, 64)).bytesRead), 'r\n', 'only the record whose line was written');
  } finally {
    await pipe.close();
    await f.close();
  }
});

test('a seam that replaces write, datasync or writeSynced makes writeLogged of its write and writeSynced', async () => {
  const f = await files();
  try {
    const calls: string[] = [];
    const io = withIo({
      write: async (fh, buf) => {
        calls.push(`write ${buf.toString().trim()}`);
        if (fh === f.b) throw errno('ENOSPC');
        return nodeIo.write(fh, buf);
      },
      datasync: async (fh) => {
        calls.push('datasync');
        return nodeIo.datasync(fh);
      },
    });
    const got = await io.writeLogged(f.log, [
      { line: { fh: f.a, buf: Buffer.from('line a\n') }, record: Buffer.from('record a\n') },
      { line: { fh: f.b, buf: Buffer.from('line b\n') }, record: Buffer.from('record b\n') },
    ]);
    assert.equal(got[0], undefined);
    assert.equal(errnoOf(got[1]?.cause), 'ENOSPC');
    assert.deepEqual(calls, ['write line a', 'write line b', 'write record a', 'datasync']);
    assert.equal(await read(f, 'log'), 'record a\n');
    // A seam that replaces none of them keeps the real one.
    assert.equal(withIo({ lstat: nodeIo.lstat }).writeLogged, nodeIo.writeLogged);
  } finally {
    await f.close();
  }
});
