// What an append file (append-file.ts) and its owner agree on: an append as its queue holds it,
// what its caller can see of it, and the hooks through which the owner (a transcript, a
// participants journal) takes part in each batch.
import type { StoreLog } from './store-log.js';
import type { WriteAheadLog } from './wal.js';

export interface AppendJob<T> {
  readonly buf: Buffer;
  readonly tag: T;
  /** Decided when its batch is written: true leaves its bytes out (`included`: the batch's jobs before it that go in). */
  readonly skip?: ((included: ReadonlySet<AppendState>) => boolean) | undefined;
  written: boolean;
  skipped: boolean;
}

/** What an append's caller can see of it: whether its bytes are in the file, or were left out (appendJob's `skip`). */
export interface AppendState {
  readonly written: boolean;
  readonly skipped: boolean;
}

export interface AppendFileOptions<T> {
  /**
   * Decides what to do with bytes after the last "\n" found when the file is first opened (a
   * crash mid-append): keep them as a line (a "\n" is appended) or drop them (truncate).
   */
  tornTail(fragment: Buffer): 'keep' | 'drop';
  /** Ends a batch after the append that makes this true, then calls `afterCut` (compaction). */
  cutAfter?(sizeAfter: number): boolean;
  afterCut?(): Promise<void>;
  /** Told, in file order, of the appends a write put in the file, before their callers are answered. */
  written?(tags: T[], sizeAfter: number): void;
  /**
   * Called with the batch's appends, the file's inode and each append's offset before their
   * bytes are written (the idempotency keys' log, append-keys.ts); a failure fails the batch.
   */
  beforeWrite?(tags: T[], ino: number, offsets: number[], bufs: Buffer[]): Promise<void>;
  /** The seq after a batch of appends, recorded with it in the log (transcripts only). */
  nextSeq?(tags: T[]): number | undefined;
  /** The idempotency keys of a batch's appends, recorded with it in the log (WalRecord's `k`). */
  walKeys?(tags: T[]): [string, number, number][] | undefined;
  /**
   * Awaited after a write that runs no compaction (`cutAfter` false), before its callers are
   * answered: work the write makes due (a transcript's summary) belongs to its call.
   */
  afterWrite?(): Promise<void>;
  /** Told the file's size and inode once it is open (and its tail repaired). */
  opened?(size: number, ino: number): void;
  /**
   * In sync mode, where appends become durable: their record in the shared log (one fdatasync
   * for every file's appends) instead of an fdatasync of this file. Its checkpoint runs before
   * any exclusive task, so no record outlives the file it is about.
   */
  wal?: WriteAheadLog;
  /** Where what no caller hears of goes (a close that failed, a compaction skipped). */
  log: StoreLog;
}
