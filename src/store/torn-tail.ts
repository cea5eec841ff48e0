// A torn tail: bytes after a file's last newline, left by a crash in the middle of an append. An
// append file (append-file.ts) repairs it when it opens the file, before its first append, so a new
// line never continues a fragment: the fragment is kept as a line of its own or dropped, as its
// owner decides (a transcript keeps a fragment that parses as a whole entry; a journal drops any).
import type { FileHandle } from 'node:fs/promises';
import type { Io } from './io.js';

/**
 * Repairs the tail of the open file `fh` of `size` bytes (more than 0): nothing to do when it ends
 * with a newline; else the fragment after the last one is kept (a "\n" appended) or dropped (the
 * file cut to the line's start), and the file fdatasynced when `sync`. Returns the size after.
 */
export async function repairTornTail(io: Io, fh: FileHandle, size: number, decide: (fragment: Buffer) => 'keep' | 'drop', sync: boolean): Promise<number> {
  const last = Buffer.alloc(1);
  await io.read(fh, last, size - 1);
  if (last[0] === 0x0a) return size;
  const start = await lastLineStart(io, fh, size);
  const fragment = Buffer.alloc(size - start);
  await io.read(fh, fragment, start);
  let after: number;
  if (decide(fragment) === 'keep') {
    await io.write(fh, Buffer.from('\n'));
    after = size + 1;
  } else {
    await io.truncate(fh, start);
    after = start;
  }
  if (sync) await io.datasync(fh);
  return after;
}

/** Offset just past the last "\n" before `size`, reading backwards in 64 KiB steps. */
async function lastLineStart(io: Io, fh: FileHandle, size: number): Promise<number> {
  const step = 64 * 1024;
  let end = size;
  while (end > 0) {
    const from = Math.max(0, end - step);
    // Stryker disable next-line ArithmeticOperator: a longer buffer reads nothing more (the file or the part already looked at ends at `end`) and its zeros are no newline
    const buf = Buffer.alloc(end - from);
    await io.read(fh, buf, from);
    const i = buf.lastIndexOf(0x0a);
    if (i >= 0) return from + i + 1;
    end = from;
  }
  return 0;
}
