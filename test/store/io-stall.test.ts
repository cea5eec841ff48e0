// A stalled disk stalls the writers waiting for it, not the event loop: appends are written
// through the thread pool. A FIFO nobody reads stands in for the stalled disk: a write larger
// than its buffer blocks until it is drained, which a write(2) on the main thread would never let
// happen (the test would hang until its timeout).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo } from '../../src/store/io.js';
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
