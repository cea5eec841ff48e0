// One session's transcript, transcripts/<name>.jsonl: Go-identical lines, appended through the
// file's queue, compacted exactly as Go compacts (but inside that queue, so no append is lost),
// with the newest ts cached: the store is the only writer, so `last` never touches the disk twice.
import path from 'node:path';
import { AppendFile } from './append-file.js';
import { encodeTranscriptLine, UnsupportedValueError } from './go-json.js';
import type { Io } from './io.js';
import type { Durability } from './state-store.js';
import { ioError, StoreError } from './store-error.js';
import type { Entry } from './transcript-read.js';
import { parseAll, parseLine, readNewest } from './transcript-read.js';

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

export class Transcript {
  private readonly log: AppendFile;
  private lastTs: string | undefined;

  constructor(
    private readonly io: Io,
    readonly file: string,
    readonly rel: string,
    durability: Durability,
    private readonly warn: (message: string, err: unknown) => void,
  ) {
    this.log = new AppendFile(io, file, rel, durability, {
      // Repair never changes what a read returns: a fragment Go would parse is kept, any other dropped.
      tornTail: (fragment) => (parseLine(fragment.toString('utf8')) ? 'keep' : 'drop'),
      cutAfter: (size) => size > COMPACT_TRIGGER_BYTES,
      afterCut: () => this.compact(),
    });
  }

  /** Appends one entry; resolves when its line is in the file. */
  async append(entry: Entry): Promise<void> {
    const line = entryLine(entry);
    await this.log.append(line);
    this.lastTs = entry.ts;
  }

  /** The newest `limit` entries (all for 0), in file order; a missing file has none. */
  async read(limit: number): Promise<Entry[]> {
    try {
      return await readNewest(this.io, this.file, limit);
    } catch (err) {
      throw ioError('read', this.rel, err);
    }
  }

  /** The ts of the last entry a full read would return, or "" (Go's ReadTranscriptLast). */
  async last(): Promise<string> {
    if (this.lastTs === undefined) this.lastTs = (await this.read(1))[0]?.ts ?? '';
    return this.lastTs;
  }

  /** Deletes the file after every queued append; `removed` says whether there was one. */
  remove(): Promise<boolean> {
    return this.log.exclusive(async () => {
      try {
        await this.io.unlink(this.file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw ioError('remove', this.rel, err);
      }
      this.lastTs = '';
      return true;
    });
  }

  settled(): Promise<void> {
    return this.log.settled();
  }

  close(): Promise<void> {
    return this.log.close();
  }

  /**
   * Go's compactTranscript, run inside the file's queue: re-reads the file, keeps the newest
   * entries within 2 MiB (re-encoded, so malformed lines go), atomic replace. A failure leaves the
   * file as it was and is retried after the next append, as Go's is.
   */
  private async compact(): Promise<void> {
    try {
      const all = parseAll(await this.io.readFile(this.file));
      if (all.length === 0) return;
      const { lines } = newestWithin(all, COMPACT_KEEP_BYTES);
      await this.io.writeAtomic(this.file, Buffer.concat(lines), { mode: 0o600, sync: true });
      await this.io.syncDir(path.dirname(this.file));
    } catch (err) {
      this.warn(`compaction of ${this.rel} failed; retried after the next append`, err);
    }
  }
}
