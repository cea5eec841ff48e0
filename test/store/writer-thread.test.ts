// The writer thread: writes asked for in one turn share one hand-off, land in order per file, and
// each caller learns its own outcome.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { errnoOf } from '../../src/common/errno.js';
import { GuardFailed } from '../../src/store/writer-thread-jobs.js';
import { WriterThread } from '../../src/store/writer-thread.js';
import { tempDir } from '../helpers/temp-dir.js';

test('writes of one turn to many files each land whole, and a file keeps its order across turns', async () => {
  const dir = tempDir();
  const writer = new WriterThread();
  const handles = await Promise.all(Array.from({ length: 20 }, (_, i) => fs.open(path.join(dir, `f${i}`), 'a')));
  try {
    const expected = handles.map(() => '');
    for (let round = 0; round < 5; round++) {
      // One turn: a write to every file, of different sizes (0 bytes included).
      const lines = handles.map((_, i) => 'x'.repeat((i * 37 + round) % 300) + `|${i}.${round}\n`);
      const written = await Promise.all(handles.map((fh, i) => writer.write(fh.fd, Buffer.from(lines[i] as string))));
      assert.deepEqual(written, lines.map((l) => Buffer.byteLength(l)));
      lines.forEach((l, i) => (expected[i] += l));
    }
    const empty = await writer.write((handles[0] as fs.FileHandle).fd, Buffer.alloc(0));
    assert.equal(empty, 0);
    for (const [i, want] of expected.entries()) assert.equal(await fs.readFile(path.join(dir, `f${i}`), 'utf8'), want);
  } finally {
    await Promise.all(handles.map((fh) => fh.close()));
  }
});

test('a failed write rejects its own caller with the errno; the others of its turn are written', async () => {
  const dir = tempDir();
  const writer = new WriterThread();
  const ok = await fs.open(path.join(dir, 'ok'), 'a');
  const readOnly = await fs.open(path.join(dir, 'ok'), 'r');
  const full = existsSync('/dev/full') ? await fs.open('/dev/full', 'w') : undefined;
  try {
    const results = await Promise.allSettled([
      writer.write(ok.fd, Buffer.from('one\n')),
      writer.write(readOnly.fd, Buffer.from('never\n')),
      ...(full ? [writer.write(full.fd, Buffer.from('no space\n'))] : []),
      writer.write(ok.fd, Buffer.from('two\n')),
    ]);
    assert.equal(results[0]?.status, 'fulfilled');
    assert.equal(results[1]?.status, 'rejected');
    assert.equal(errnoOf((results[1] as PromiseRejectedResult).reason), 'EBADF');
    assert.match(((results[1] as PromiseRejectedResult).reason as Error).message, /EBADF/);
    if (full) assert.equal(errnoOf((results[2] as PromiseRejectedResult).reason), 'ENOSPC');
    assert.equal(results[results.length - 1]?.status, 'fulfilled');
    assert.equal(await fs.readFile(path.join(dir, 'ok'), 'utf8'), 'one\ntwo\n');
  } finally {
    await Promise.all([ok.close(), readOnly.close(), full?.close()]);
  }
});

test('a pending write or replace keeps the process alive and an idle writer does not', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'out');
  const replaced = path.join(dir, 'state.json');
  const module = new URL('../../src/store/writer-thread.ts', import.meta.url).href;
  // Nothing else holds the loop: without the worker's ref the process would exit before the write
  // or the replace answers (exit code 13, "unsettled top-level await"); with an idle worker still
  // referenced it would never exit (the test's timeout). Two writers: the one that last answered a
  // write and the one that last answered a replace must each let go.
  const script = `
    import fs from 'node:fs/promises';
    import { WriterThread } from ${JSON.stringify(module)};
    const fh = await fs.open(${JSON.stringify(file)}, 'a');
    const n = await new WriterThread().write(fh.fd, Buffer.from('kept\\n'));
    await fh.close();
    const st = await new WriterThread().replace(${JSON.stringify(replaced)}, 'replaced', { mode: 0o600, sync: false });
    process.stdout.write(n + ' ' + st.size);
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(stdout, '5 8');
  assert.equal(readFileSync(file, 'utf8'), 'kept\n');
  assert.equal(readFileSync(replaced, 'utf8'), 'replaced');
});

test('a turn asking for more than one batch holds (bytes or jobs) is written whole, in order, over several batches', async () => {
  const dir = tempDir();
  const writer = new WriterThread();
  const handles = await Promise.all(Array.from({ length: 10 }, (_, i) => fs.open(path.join(dir, `f${i}`), 'a')));
  try {
    const expected = handles.map(() => '');
    const writes: Promise<number>[] = [];
    // 5 000 small writes (more jobs than one batch takes) and 24 of 64 KiB (more bytes).
    for (let n = 0; n < 5000; n++) {
      const i = n % handles.length;
      const line = `${n}\n`;
      expected[i] += line;
      writes.push(writer.write((handles[i] as fs.FileHandle).fd, Buffer.from(line)));
    }
    for (let n = 0; n < 24; n++) {
      const i = n % handles.length;
      const block = `${String.fromCharCode(97 + (n % 26)).repeat(64 * 1024 - 1)}\n`;
      expected[i] += block;
      writes.push(writer.write((handles[i] as fs.FileHandle).fd, Buffer.from(block)));
    }
    const written = await Promise.all(writes);
    assert.equal(written.reduce((a, b) => a + b, 0), expected.reduce((a, s) => a + Buffer.byteLength(s), 0));
    for (const [i, want] of expected.entries()) assert.equal(await fs.readFile(path.join(dir, `f${i}`), 'utf8'), want);
  } finally {
    await Promise.all(handles.map((fh) => fh.close()));
  }
});

test('a write asked to be synced is answered after its fdatasync, and a failed sync reaches its caller', async () => {
  const dir = tempDir();
  const writer = new WriterThread();
  const fh = await fs.open(path.join(dir, 'durable'), 'a');
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const pipe = await fs.open(fifo, 'r+');
  try {
    const [synced, plain, failed] = await Promise.allSettled([
      writer.write(fh.fd, Buffer.from('durable\n'), { datasync: true }),
      writer.write(pipe.fd, Buffer.from('plain\n')),
      // A FIFO takes the bytes but cannot be synced (EINVAL): the caller hears of the sync.
      writer.write(pipe.fd, Buffer.from('synced\n'), { datasync: true }),
    ]);
    assert.deepEqual(synced, { status: 'fulfilled', value: 8 });
    assert.deepEqual(plain, { status: 'fulfilled', value: 6 });
    assert.equal(failed.status, 'rejected');
    assert.equal(errnoOf((failed as PromiseRejectedResult).reason), 'EINVAL');
    assert.equal(((failed as PromiseRejectedResult).reason as NodeJS.ErrnoException).syscall, 'fdatasync');
    assert.equal(await fs.readFile(path.join(dir, 'durable'), 'utf8'), 'durable\n');
  } finally {
    await fh.close();
    await pipe.close();
  }
});

test('a batch and a replace posted together are both answered, each with its own outcome', async () => {
  const dir = tempDir();
  const writer = new WriterThread();
  const fh = await fs.open(path.join(dir, 'log'), 'a');
  try {
    // One turn posts both: the worker takes the batch and the replace from one wake.
    const [written, stamp] = await Promise.all([
      writer.write(fh.fd, Buffer.from('line\n')),
      writer.replace(path.join(dir, 'state.json'), '{}', { mode: 0o600, sync: false }),
    ]);
    assert.equal(written, 5);
    assert.equal(stamp.size, 2);
    assert.equal(await fs.readFile(path.join(dir, 'log'), 'utf8'), 'line\n');
    assert.equal(await fs.readFile(path.join(dir, 'state.json'), 'utf8'), '{}');
  } finally {
    await fh.close();
  }
});

test('a group is one batch: a write after a failed one it depends on is left out, the rest land in order; a busy writer takes no group', async () => {
  const dir = tempDir();
  const writer = new WriterThread();
  const ok = await fs.open(path.join(dir, 'ok'), 'a');
  const log = await fs.open(path.join(dir, 'log'), 'a');
  const readOnly = await fs.open(path.join(dir, 'ok'), 'r');
  try {
    const got = await writer.writeGroup([
      { fd: ok.fd, buf: Buffer.from('a\n') },
      { fd: readOnly.fd, buf: Buffer.from('b\n') },
      { fd: log.fd, buf: Buffer.from('record a\n'), after: 0 },
      { fd: log.fd, buf: Buffer.from('record b\n'), after: 1 },
      { fd: log.fd, buf: Buffer.alloc(0), datasync: true },
    ]);
    assert.equal(got[0], undefined);
    assert.equal(errnoOf(got[1]), 'EBADF');
    assert.equal(got[2], undefined);
    assert.ok(got[3] instanceof GuardFailed, String(got[3]));
    assert.equal(got[4], undefined);
    assert.equal(await fs.readFile(path.join(dir, 'ok'), 'utf8'), 'a\n');
    assert.equal(await fs.readFile(path.join(dir, 'log'), 'utf8'), 'record a\n');
    // A write out: the group is refused and writes nothing.
    const pending = writer.write(ok.fd, Buffer.from('c\n'));
    await assert.rejects(writer.writeGroup([{ fd: log.fd, buf: Buffer.from('never\n') }]), /idle writer thread/);
    await pending;
    assert.deepEqual(await writer.writeGroup([]), [], 'an empty group is answered at once');
    assert.equal(await fs.readFile(path.join(dir, 'log'), 'utf8'), 'record a\n');
    assert.equal(await fs.readFile(path.join(dir, 'ok'), 'utf8'), 'a\nc\n');
  } finally {
    await Promise.all([ok.close(), log.close(), readOnly.close()]);
  }
});
