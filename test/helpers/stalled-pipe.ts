// A disk that holds a write back, on demand: a FIFO filled to the brim through a non-blocking
// handle of its own, so that the next write(2) to it through an ordinary (blocking) handle waits
// until the pipe is drained. The writer thread stuck in that write stands still, deterministically,
// for as long as a test needs to look at what it has and has not done; `drain` lets it go.
import { execFileSync } from 'node:child_process';
import { closeSync, constants, openSync, readSync, writeSync } from 'node:fs';
import path from 'node:path';
import { errnoOf } from '../../src/common/errno.js';
import { tempDir } from './temp-dir.js';

export interface StalledPipe {
  /** A blocking handle on the full pipe: a write to it waits until `release`. */
  readonly fd: number;
  /**
   * Drains until `bytes` more than the filler's came through (the writes held by the pipe are
   * done) or `orWhen` settles, then closes both handles; returns the bytes that came through. Gives up after 10 s (throws), so that
   * a write that never comes cannot hang the test; a second call only closes.
   */
  release(bytes: number, orWhen?: Promise<unknown>): Promise<Buffer>;
}

/** Writes to the non-blocking `fd` of a pipe until it refuses (EAGAIN): full, however big this kernel makes pipes. Returns the bytes written. */
export function fillToBrim(fd: number): number {
  let filled = 0;
  const chunk = Buffer.alloc(4096, 0x2e);
  for (;;) {
    try {
      filled += writeSync(fd, chunk);
    } catch (err) {
      if (errnoOf(err) === 'EAGAIN') return filled;
      throw err;
    }
  }
}

export function stalledPipe(): StalledPipe {
  const fifo = path.join(tempDir(), 'stalled');
  execFileSync('mkfifo', [fifo]);
  const filler = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
  const fd = openSync(fifo, constants.O_RDWR);
  let toSkip = fillToBrim(filler);
  /** Reads out what the pipe holds now; returns what came after the filler's bytes. */
  const drain = (): Buffer => {
    const parts: Buffer[] = [];
    const into = Buffer.alloc(64 * 1024);
    for (;;) {
      let n: number;
      try {
        n = readSync(filler, into);
      } catch (err) {
        if (errnoOf(err) === 'EAGAIN') break;
        throw err;
      }
      const skip = Math.min(toSkip, n);
      toSkip -= skip;
      parts.push(Buffer.from(into.subarray(skip, n)));
    }
    return Buffer.concat(parts);
  };
  let closed = false;
  let through = 0;
  const release = async (bytes: number, orWhen?: Promise<unknown>): Promise<Buffer> => {
    const parts: Buffer[] = [];
    const deadline = Date.now() + 10_000;
    let settled = false;
    void orWhen?.then(() => (settled = true), () => (settled = true));
    while (!closed && through < bytes && !settled && Date.now() < deadline) {
      const got = drain();
      through += got.length;
      parts.push(got);
      if (through < bytes) await new Promise((r) => setTimeout(r, 1));
    }
    if (!closed) {
      closed = true;
      closeSync(fd);
      closeSync(filler);
    }
    if (through < bytes && !settled) throw new Error(`${through} of the ${bytes} bytes expected came through the pipe`);
    return Buffer.concat(parts);
  };
  return { fd, release };
}
