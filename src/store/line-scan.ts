// Reading a whole file line by line without blocking the event loop: transcripts (first access,
// compaction) and participants journals (first access) can be hundreds of MB, and parsing one in
// a single synchronous run stalled every other client for seconds.
import type { FileHandle } from 'node:fs/promises';
import type { Io } from './io.js';

/**
 * Bytes a scan hands its parser per read: a few ms of parsing, after which the event loop runs
 * whatever else is waiting. A 200 MB transcript read in one piece blocked it 2.7-7 s.
 */
export const SCAN_CHUNK = 1024 * 1024;

/**
 * Calls `onLine` for each line (without its `\n`) of the first `size` bytes of `fh` from offset
 * `from` (a line start; default 0), in file order, reading SCAN_CHUNK bytes at a time: every read returns to the event loop, so no file
 * blocks it for longer than one chunk's parse (one line longer than a chunk is still handed over
 * whole). A line spanning chunks is joined once, so the cost stays linear. `onLine` returning
 * false stops the scan. A last line without `\n` is handed over only with `unterminated: true`.
 */
export async function scanLines(
  io: Io,
  fh: FileHandle,
  size: number,
  onLine: (line: Buffer) => boolean | void,
  { unterminated, from = 0 }: { unterminated: boolean; from?: number },
): Promise<void> {
  let pos = from;
  let partial: Buffer[] = []; // the start of a line that continues in the next chunk
  while (pos < size) {
    const chunk = Buffer.alloc(Math.min(SCAN_CHUNK, size - pos));
    const n = await io.read(fh, chunk, pos);
    if (n === 0) break; // the file is shorter than `size`: what is there is all there is
    pos += n;
    const got = chunk.subarray(0, n);
    let start = 0;
    for (let nl = got.indexOf(0x0a); nl >= 0; nl = got.indexOf(0x0a, start)) {
      const piece = got.subarray(start, nl);
      if (onLine(partial.length === 0 ? piece : Buffer.concat([...partial, piece])) === false) return;
      partial = [];
      start = nl + 1;
    }
    if (start < got.length) partial.push(got.subarray(start));
  }
  if (unterminated && partial.length > 0) onLine(Buffer.concat(partial));
}
