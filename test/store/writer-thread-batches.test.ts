// How the writer thread cuts what one turn asks for into batches, and what each caller sees of it:
// a batch is answered at once (its writes resolve together, and only once their bytes are in their
// files), the next batch starts where the last one was cut, in order; a write posted while a batch
// is out waits for the next one; `idle` says when nothing is out or waiting; one writer is one
// thread. A FIFO filled to the brim holds a batch out for as long as a test looks at it.
import assert from 'node:assert/strict';
import { fstatSync, openSync, closeSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo } from '../../src/store/io.js';
import { BATCHED_WRITE_MAX, BATCH_BYTES, BATCH_JOBS } from '../../src/store/writer-thread-jobs.js';
import { WriterThread } from '../../src/store/writer-thread.js';
import { stalledPipe } from '../helpers/stalled-pipe.js';
import { tempDir } from '../helpers/temp-dir.js';

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
/** One writer for the file's tests: each start of its thread costs ~0.2 s of CPU under tsx. */
const writer = new WriterThread();

interface Asked {
  readonly fd: number;
  readonly buf: Buffer;
  /** The size its file must have reached once it is written (the files are appended to). */
  readonly end: number;
}

/**
 * Posts every write in one turn and returns the groups they were answered in, by index: writes
 * answered by one answer resolve in one synchronous run, before any microtask queued by the first
 * of them runs. Each answer is checked when it arrives: its bytes are already in its file.
 */
async function answeredInGroups(asked: Asked[]): Promise<number[][]> {
  const groups: number[][] = [];
  let open = false;
  const early: number[] = [];
  await Promise.all(asked.map((a, i) => writer.write(a.fd, a.buf).then((n) => {
    assert.equal(n, a.buf.length);
    if (fstatSync(a.fd).size < a.end) early.push(i);
    if (!open) {
      open = true;
      groups.push([]);
      queueMicrotask(() => (open = false));
    }
    groups[groups.length - 1]!.push(i);
  })));
  assert.deepEqual(early, [], 'no write is answered before its bytes are in its file');
  return groups;
}

function appends(files: number[], sizes: number[]): Asked[] {
  const ends = new Map<number, number>();
  return sizes.map((size, i) => {
    const fd = files[i % files.length]!;
    const end = (ends.get(fd) ?? 0) + size;
    ends.set(fd, end);
    return { fd, buf: Buffer.alloc(size, 97 + (i % 26)), end };
  });
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

test('a turn of more writes than a batch holds is answered in two batches, cut at the job limit, in order', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const files = [0, 1, 2].map((i) => openSync(path.join(dir, `f${i}`), 'a'));
  try {
    const asked = appends(files, Array.from({ length: BATCH_JOBS + 1 }, (_, i) => 1 + (i % 5)));
    const groups = await answeredInGroups(asked);
    assert.deepEqual(groups, [range(0, BATCH_JOBS), [BATCH_JOBS]]);
    for (const [k, fd] of files.entries()) {
      const want = Buffer.concat(asked.filter((a) => a.fd === fd).map((a) => a.buf));
      assert.ok(readFileSync(path.join(dir, `f${k}`)).equals(want), `f${k} holds its writes in order`);
    }
  } finally {
    files.forEach((fd) => closeSync(fd));
  }
});

test('writes that fill a batch\'s bytes exactly go in one batch; the next write starts the next', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const file = openSync(path.join(dir, 'f'), 'a');
  try {
    const full = BATCH_BYTES / BATCHED_WRITE_MAX;
    const sizes = [...Array.from({ length: full }, () => BATCHED_WRITE_MAX), 1, BATCHED_WRITE_MAX - 1, 2];
    const asked = appends([file], sizes);
    const groups = await answeredInGroups(asked);
    assert.deepEqual(groups, [range(0, full), range(full, full + 3)]);
    assert.ok(readFileSync(path.join(dir, 'f')).equals(Buffer.concat(asked.map((a) => a.buf))));
  } finally {
    closeSync(file);
  }
});

test('writes posted while a batch is out wait for it, then go together in the next batch; idle says when nothing is out or waiting', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const file = openSync(path.join(dir, 'f'), 'a');
  const pipe = stalledPipe();
  try {
    assert.equal(writer.idle, true, 'nothing asked for');
    const held = writer.write(pipe.fd, Buffer.from('held\n'));
    assert.equal(writer.idle, false, 'a write asked for and not posted yet');
    await turn();
    assert.equal(writer.idle, false, 'a batch out, nothing else waiting');
    const later = [writer.write(file, Buffer.from('one\n')), writer.write(file, Buffer.from('two\n'))];
    let answered = 0;
    for (const p of later) void p.then(() => answered++);
    await turn();
    await turn();
    assert.equal(answered, 0, 'the writes posted meanwhile wait for the batch out');
    assert.equal(readFileSync(path.join(dir, 'f'), 'utf8'), '');
    assert.equal(writer.idle, false);
    assert.equal((await pipe.release(5)).toString(), 'held\n');
    assert.deepEqual(await Promise.all([held, ...later]), [5, 4, 4]);
    assert.equal(readFileSync(path.join(dir, 'f'), 'utf8'), 'one\ntwo\n');
    assert.equal(writer.idle, true, 'everything answered');
    const replaced = writer.replace(path.join(dir, 'state.json'), '{}', { mode: 0o600, sync: false });
    assert.equal(writer.idle, false, 'a replace out');
    await replaced;
    assert.equal(writer.idle, true, 'the replace answered');
  } finally {
    await pipe.release(5).catch(() => {});
    closeSync(file);
  }
});

test('a write up to BATCHED_WRITE_MAX goes through the writer thread (and waits behind what holds it), a bigger one around it', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const small = await fs.open(path.join(dir, 'small'), 'a');
  const big = await fs.open(path.join(dir, 'big'), 'a');
  const pipe = stalledPipe();
  const pipeFh = { fd: pipe.fd } as fs.FileHandle;
  try {
    const held = nodeIo.write(pipeFh, Buffer.from('held\n'));
    await turn();
    let smallDone = false;
    const atMost = nodeIo.write(small, Buffer.alloc(BATCHED_WRITE_MAX, 0x73)).then((n) => {
      smallDone = true;
      return n;
    });
    assert.equal(await nodeIo.write(big, Buffer.alloc(BATCHED_WRITE_MAX + 1, 0x62)), BATCHED_WRITE_MAX + 1);
    assert.equal(smallDone, false, 'the write of BATCHED_WRITE_MAX bytes waits behind the held batch');
    await pipe.release(5);
    assert.deepEqual(await Promise.all([held, atMost]), [5, BATCHED_WRITE_MAX]);
    assert.equal((await small.stat()).size, BATCHED_WRITE_MAX);
  } finally {
    await pipe.release(5).catch(() => {});
    await small.close();
    await big.close();
  }
});

test('one writer is one thread, whatever it is asked for', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  // Its thread runs already (the tests above): none starts for what follows.
  const first = openSync(path.join(dir, 'first'), 'a');
  await writer.write(first, Buffer.from('x'));
  closeSync(first);
  let started = 0;
  const count = (): void => void started++;
  process.on('worker', count);
  try {
    const file = openSync(path.join(dir, 'f'), 'a');
    try {
      for (let round = 0; round < 3; round++) {
        await Promise.all([
          writer.write(file, Buffer.from(`${round}\n`)),
          writer.replace(path.join(dir, 'state.json'), `${round}`, { mode: 0o600, sync: false }),
        ]);
        await writer.write(file, Buffer.from(`${round}.\n`));
      }
    } finally {
      closeSync(file);
    }
    assert.equal(readFileSync(path.join(dir, 'f'), 'utf8'), '0\n0.\n1\n1.\n2\n2.\n');
    assert.equal(started, 0);
  } finally {
    process.off('worker', count);
  }
});
