// Tolerant transcript reading with Go's ReadTranscript rules: blank and unparsable lines are
// skipped, lines are TrimSpace'd, the last line needs no "\n". Reading the newest N entries
// walks the file backwards, so its cost follows N, not the file's size.
import type { FileHandle } from 'node:fs/promises';
import type { TranscriptEntry } from '../protocol/model.js';
import { decodeTranscriptLine } from './go-decode.js';
import type { Io } from './io.js';
import { scanLines } from './line-scan.js';
import { goDecodeUtf8, goTrimSpace } from './go-text.js';
import { errnoOf } from '../common/errno.js';

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
 * Calls `onEntry` for each entry of the first `size` bytes of `fh`, in file order, as parseAll
 * would return them, streamed (scanLines): the last line needs no `\n`, as in Go's reader. From
 * offset `from` (a line start) when given: the entries after a summary's end.
 */
export async function scanEntries(io: Io, fh: FileHandle, size: number, onEntry: (e: Entry) => void, from = 0): Promise<void> {
  await scanLines(
    io,
    fh,
    size,
    (line) => {
      const e = parseLine(goDecodeUtf8(line));
      if (e) onEntry(e);
    },
    { unterminated: true, from },
  );
}

/** Which part of which version of the file to read. */
export interface Window {
  /** Inode the file must still have; otherwise an ESTALE error (it was replaced meanwhile). */
  ino?: number;
  /** Read as if the file ended here (bytes appended later are not looked at). */
  size?: number;
  /** Entries to pass over, counted from the end. */
  skip?: number;
  /**
   * Asked once the file is open: false when the version the window describes was replaced
   * meanwhile (an inode number can be reused, so the inode alone does not prove it).
   */
  stillCurrent?: () => boolean;
  /** How many entries to return (0: all). */
  limit?: number;
}

const stale = (): NodeJS.ErrnoException => Object.assign(new Error('the file was replaced during the read'), { code: 'ESTALE' });

/**
 * Entries of a window, in file order, read in 64 KiB blocks from the end until enough are found:
 * the cost follows `skip + limit`, not the file's size. A missing file has no entries (as Go).
 */
export async function readNewest(io: Io, file: string, w: Window = {}): Promise<Entry[]> {
  return (await walkBack(io, file, w, true)).entries;
}

/**
 * The byte offset where the line of the `limit`th newest entry (after `skip`) begins, read as
 * readNewest reads, without keeping the entries: where a forward read (readForward) of the
 * newest `limit` entries starts; with fewer entries, where the oldest begins (0 with none).
 */
export async function startOfNewest(io: Io, file: string, w: Window & { limit: number }): Promise<number> {
  return (await walkBack(io, file, w, false)).start;
}

async function walkBack(io: Io, file: string, w: Window, keep: boolean): Promise<{ entries: Entry[]; start: number }> {
  let fh: FileHandle;
  try {
    fh = await io.open(file, 'r');
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
    if (w.ino !== undefined) throw stale();
    return { entries: [], start: 0 };
  }
  try {
    if (w.ino !== undefined && (await io.inode(fh)) !== w.ino) throw stale();
    if (w.stillCurrent && !w.stillCurrent()) throw stale();
    const size = w.size ?? (await io.size(fh));
    const limit = w.limit && w.limit > 0 ? w.limit : Infinity;
    let skip = w.skip ?? 0;
    const found: Entry[] = [];
    let taken = 0;
    let start = 0;
    let end = size;
    // The part of a line that began in an earlier block, as the blocks it spans, newest first.
    // Joined once, when the line's start is found: re-joining per block made a long line
    // quadratic (40 MB took 17-48 s).
    let tail: Buffer[] = [];
    // `at`: the offset where the line begins.
    const take = (head: Buffer, at: number): boolean => {
      const bytes = tail.length === 0 ? head : Buffer.concat([head, ...tail.reverse()]);
      tail = [];
      const e = parseLine(goDecodeUtf8(bytes));
      if (!e) return false;
      if (skip > 0) skip--;
      else {
        taken++;
        start = at;
        if (keep) found.push(e);
      }
      return taken === limit;
    };
    while (end > 0 && found.length < limit) {
      const from = Math.max(0, end - STEP);
      const block = Buffer.alloc(end - from);
      // Fewer bytes than the window promises: the file is not the version it describes.
      if ((await io.read(fh, block, from)) !== block.length) throw stale();
      // Only this block is searched for line ends: the tail holds none.
      let stop = block.length;
      let done = false;
      for (;;) {
        // Not lastIndexOf(…, -1) once stop is 0: a negative offset counts from the end.
        const i = stop > 0 ? block.lastIndexOf(0x0a, stop - 1) : -1;
        if (i < 0) {
          if (from > 0) tail.push(block.subarray(0, stop)); // the line continues further back
          else done = take(block.subarray(0, stop), 0);
          break;
        }
        if (take(block.subarray(i + 1, stop), from + i + 1)) {
          done = true;
          break;
        }
        stop = i;
      }
      if (done) break;
      end = from;
    }
    return { entries: found.reverse(), start };
  } finally {
    await fh.close();
  }
}

/** Where a forward read starts, and how much it may return. */
export interface ForwardWindow {
  /** Inode the file must still have; otherwise an ESTALE error (it was replaced meanwhile). */
  ino: number;
  /** Read as if the file ended here. */
  size: number;
  /** Asked once the file is open, as Window's. */
  stillCurrent: () => boolean;
  /** The byte offset of a line's start to read from. */
  offset: number;
  /** Entries to pass over first. */
  skip: number;
  /** At most this many entries. */
  limit: number;
  /** Stop once the lines returned hold this many bytes (one longer line is still returned whole). */
  maxBytes: number;
}

/**
 * Entries from `offset` on, in file order, as parseAll would return them, at most `limit` of them
 * and about `maxBytes` of their lines; `next` is the offset after the last line read (where the
 * next page starts). The last line needs no `\n` (Go's reader). Reads in 64 KiB blocks, so the
 * cost follows what is passed over and returned, not the file's size.
 */
export async function readForward(io: Io, file: string, w: ForwardWindow): Promise<{ entries: Entry[]; next: number }> {
  let fh: FileHandle;
  try {
    fh = await io.open(file, 'r');
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
    throw stale();
  }
  try {
    if ((await io.inode(fh)) !== w.ino || !w.stillCurrent()) throw stale();
    const entries: Entry[] = [];
    let skip = w.skip;
    let bytes = 0;
    let pos = w.offset;
    let next = w.offset;
    // The start of a line that continues in the next block; joined once, when its end is found.
    let partial: Buffer[] = [];
    const full = (): boolean => entries.length >= w.limit || bytes >= w.maxBytes;
    const take = (line: Buffer): void => {
      const e = parseLine(goDecodeUtf8(line));
      if (!e) return;
      if (skip > 0) skip--;
      else {
        entries.push(e);
        bytes += line.length + 1;
      }
    };
    while (pos < w.size && !full()) {
      const block = Buffer.alloc(Math.min(STEP, w.size - pos));
      if ((await io.read(fh, block, pos)) !== block.length) throw stale();
      let at = 0;
      while (!full()) {
        const nl = block.indexOf(0x0a, at);
        if (nl < 0) {
          partial.push(block.subarray(at));
          break;
        }
        const piece = block.subarray(at, nl);
        take(partial.length === 0 ? piece : Buffer.concat([...partial, piece]));
        partial = [];
        at = nl + 1;
        next = pos + at;
      }
      pos += block.length;
    }
    // The version's last line, without "\n": read whole once the version's end is reached.
    if (!full() && pos >= w.size && partial.length > 0) {
      take(Buffer.concat(partial));
      next = w.size;
    }
    return { entries, next };
  } finally {
    await fh.close();
  }
}
