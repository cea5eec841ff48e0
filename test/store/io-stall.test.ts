// A stalled disk stalls the writers waiting for it, not the event loop: big writes go through the
// thread pool, small ones through the writer thread (writer-thread.ts). A FIFO nobody reads stands in for the stalled disk: a write larger
// than its buffer blocks until it is drained, which a write(2) on the main thread would never let
// happen (the test would hang until its timeout).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo, withIo } from '../../src/store/io.js';
import { newSession, openIn } from '../helpers/store.js';
import { fillToBrim } from '../helpers/stalled-pipe.js';
import { tempDir } from '../helpers/temp-dir.js';

test('a write the disk holds back leaves the event loop free: the writer waits, others run', { timeout: 20_000 }, async () => {
  const fifo = path.join(tempDir(), 'stalled');
  execFileSync('mkfifo', [fifo]);
  // O_RDWR: opening a FIFO this way does not wait for the other end.
  const writer = await fs.open(fifo, 'r+');
  const reader = await fs.open(fifo, 'r+');
  try {
    const size = 1024 * 1024; // far more than a pipe holds (64 KiB): the write blocks until drained
    let done = false;
    const pending = nodeIo.write(writer, Buffer.alloc(size, 0x78)).then((n) => {
      done = true;
      return n;
    });
    // The event loop still runs while the write is held: this is what a memory-only read needs.
    await new Promise<void>((r) => setImmediate(r));
    assert.equal(done, false, 'the write is still held by the full pipe');
    let drained = 0;
    const chunk = Buffer.alloc(64 * 1024);
    while (drained < size) drained += (await reader.read(chunk, 0, chunk.length, null)).bytesRead;
    assert.equal(await pending, size);
  } finally {
    await writer.close();
    await reader.close();
  }
});

test('a small write the disk holds back (the writer thread) leaves the event loop free too', { timeout: 20_000 }, async () => {
  const fifo = path.join(tempDir(), 'stalled');
  execFileSync('mkfifo', [fifo]);
  const writer = await fs.open(fifo, 'r+');
  const reader = await fs.open(fifo, 'r+');
  // The pipe is filled first through a non-blocking handle of its own.
  const filler = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
  try {
    const filled = fillToBrim(filler);
    let done = false;
    const small = nodeIo.write(writer, Buffer.from('small\n')).then((n) => {
      done = true;
      return n;
    });
    await new Promise<void>((r) => setImmediate(r));
    assert.equal(done, false, 'the small write is still held by the full pipe');
    let drained = 0;
    const into = Buffer.alloc(64 * 1024);
    while (drained < filled + 6) drained += (await reader.read(into, 0, into.length, null)).bytesRead;
    assert.equal(await small, 6);
    assert.equal(drained, filled + 6);
  } finally {
    closeSync(filler);
    await writer.close();
    await reader.close();
  }
});

test('while an append is held by the disk, memory-only reads of the store still answer', async (t) => {
  const dir = tempDir();
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let hold = false;
  const io = withIo({
    write: async (fh, buf) => {
      if (hold) await held;
      return nodeIo.write(fh, buf);
    },
  });
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', { ts: 't1', role: 'user', text: 'a', cost: 0.5 });
  hold = true;
  let appended = false;
  const pending = store.appendTranscript('s', { ts: 't2', role: 'user', text: 'b' }).then((seq) => {
    appended = true;
    return seq;
  });
  assert.equal(await store.lastTranscriptTs('s'), 't1');
  assert.equal((await store.transcriptUsage('s')).cost, 0.5);
  assert.equal(store.findSession('s')?.name, 's');
  assert.equal(appended, false, 'the append still waits for its write');
  release();
  assert.equal(await pending, 1);
});
