// Go's compaction of a transcript (transcript.go), as the store's Transcript runs it inside the
// file's queue: when it runs (the trigger), what it keeps (the newest lines within 2 MiB, at least
// one) and the usage of what it drops; the replace itself is in transcript-replace.ts.
import { HEAD_BYTES } from './file-head.js';
import { encodeTranscriptLine, UnsupportedValueError } from './go-json.js';
import type { Io } from './io.js';
import { StoreError } from './store-error.js';
import type { Entry } from './transcript-read.js';
import { scanEntries } from './transcript-read.js';
import type { UsageSum } from './usage.js';
import { addEntry } from './usage.js';

/** Go compacts once an append leaves the file strictly larger than this (transcript.go). */
export const COMPACT_TRIGGER_BYTES = 4 * 1024 * 1024;
/** Half the trigger, so ~2 MiB of fresh appends accumulate before the next compaction (as Go). */
export const COMPACT_KEEP_BYTES = 2 * 1024 * 1024;
/** Encodes an entry as its line, refusing what Go's Marshal refuses (NaN, ±Inf). */
export function entryLine(entry: Entry): Buffer {
  try {
    return Buffer.from(encodeTranscriptLine(entry));
  } catch (err) {
    if (err instanceof UnsupportedValueError) throw new StoreError('invalid-input', err.message);
    throw err;
  }
}

/** Go's compaction choice: the newest entries whose lines fit in `keep` bytes, at least one. */
export function newestWithin(entries: readonly Entry[], keep: number): { kept: Entry[]; lines: Buffer[] } {
  const lines: Buffer[] = [];
  let total = 0;
  for (let i = entries.length - 1; i >= 0; i--) {
    const line = entryLine(entries[i] as Entry);
    if (lines.length > 0 && total + line.length > keep) break;
    total += line.length;
    lines.push(line);
  }
  lines.reverse();
  return { kept: entries.slice(entries.length - lines.length), lines };
}

/** What compaction keeps of a file: the newest lines within 2 MiB, and what the rest used. */
export interface Newest {
  /** Entries in the file. */
  count: number;
  /** The kept entries' lines, in file order. */
  lines: Buffer[];
  /** Usage of everything compacted away: the entries not kept folded onto the earlier sum. */
  removed: UsageSum;
}

const EMPTY = Buffer.alloc(0);

/**
 * Go's compaction choice over the whole file, streamed (scanEntries): the newest entries whose
 * re-encoded lines fit in COMPACT_KEEP_BYTES (at least one), as newestWithin picks them, and
 * the usage of the others. A window slides over the file, so only ~2 MiB of lines is held.
 */
export async function newestOfFile(io: Io, file: string, before: UsageSum): Promise<Newest> {
  const fh = await io.open(file, 'r');
  const window: Buffer[] = [];
  let head = 0; // window[head..] is the kept suffix so far
  let bytes = 0;
  let count = 0;
  const removed = { ...before };
  const entries: Entry[] = [];
  try {
    await scanEntries(io, fh, await io.size(fh), (e) => {
      const line = entryLine(e);
      count++;
      window.push(line);
      entries.push(e);
      bytes += line.length;
      while (bytes > COMPACT_KEEP_BYTES && window.length - head > 1) {
        bytes -= (window[head] as Buffer).length;
        addEntry(removed, entries[head] as Entry);
        window[head] = EMPTY;
        entries[head] = undefined as unknown as Entry;
        head++;
      }
      if (head > 4096 && head * 2 > window.length) {
        window.splice(0, head);
        entries.splice(0, head);
        head = 0;
      }
    });
  } finally {
    await fh.close();
  }
  return { count, lines: window.slice(head), removed };
}

/** The first HEAD_BYTES bytes of the lines a compaction writes. */
export function prefixOf(lines: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [];
  let n = 0;
  for (const l of lines) {
    if (n >= HEAD_BYTES) break;
    parts.push(l);
    n += l.length;
  }
  return Buffer.concat(parts).subarray(0, HEAD_BYTES);
}
