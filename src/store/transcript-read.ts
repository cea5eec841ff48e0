// Tolerant transcript reading with Go's ReadTranscript rules: blank and unparsable lines are
// skipped, lines are TrimSpace'd, the last line needs no "\n". Reading the newest N entries
// walks the file backwards, so its cost follows N, not the file's size.
import type { FileHandle } from 'node:fs/promises';
import type { TranscriptEntry } from '../protocol/model.js';
import { decodeTranscriptLine } from './go-decode.js';
import type { Io } from './io.js';
import { goTrimSpace } from './go-text.js';

export type Entry = TranscriptEntry;

/** Decodes one raw line (without its "\n") or returns undefined for a line Go would skip. */
export function parseLine(raw: string): Entry | undefined {
  const line = goTrimSpace(raw);
  if (line === '') return undefined;
  return decodeTranscriptLine(line) as Entry | undefined;
}

/** Every entry of a transcript's bytes, in file order. */
export function parseAll(buf: Buffer): Entry[] {
  const out: Entry[] = [];
  let start = 0;
  while (start < buf.length) {
    let end = buf.indexOf(0x0a, start);
    if (end < 0) end = buf.length;
    const e = parseLine(buf.toString('utf8', start, end));
    if (e) out.push(e);
    start = end + 1;
  }
  return out;
}

const STEP = 64 * 1024;

/**
 * The newest `limit` entries (all when limit <= 0), in file order, reading 64 KiB blocks from
 * the end until enough are found. A missing file reads as no entries (as Go).
 */
export async function readNewest(io: Io, file: string, limit: number): Promise<Entry[]> {
  let fh: FileHandle;
  try {
    fh = await io.open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  try {
    const size = await io.size(fh);
    if (limit <= 0) {
      const buf = Buffer.alloc(size);
      await io.read(fh, buf, 0);
      return parseAll(buf);
    }
    const found: Entry[] = [];
    let end = size;
    let carry: Buffer = Buffer.alloc(0); // the start of a line that began in an earlier block
    while (end > 0 && found.length < limit) {
      const from = Math.max(0, end - STEP);
      const block = Buffer.alloc(end - from);
      await io.read(fh, block, from);
      const buf = carry.length ? Buffer.concat([block, carry]) : block;
      let stop = buf.length;
      for (let i = buf.lastIndexOf(0x0a, stop - 1); ; i = buf.lastIndexOf(0x0a, stop - 1)) {
        if (i < 0 && from > 0) break; // the first line of this block may continue further back
        const e = parseLine(buf.toString('utf8', i + 1, stop));
        if (e) {
          found.push(e);
          if (found.length === limit) break;
        }
        if (i < 0) break;
        stop = i;
      }
      carry = buf.subarray(0, stop);
      end = from;
    }
    return found.reverse();
  } finally {
    await fh.close();
  }
}
