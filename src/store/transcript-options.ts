// What a Transcript (transcript.ts) is made of and told through: its files, its durability and
// logs, its seq high-water mark, the listener of its appends, and an append as its file's queue
// holds it.
import type { AppendKeys } from './append-keys.js';
import type { Io } from './io.js';
import type { Durability } from './state-store.js';
import type { StoreLog } from './store-log.js';
import type { Entry } from './transcript-read.js';
import type { WriteAheadLog } from './wal.js';
import type { WriterKey } from './writer-sequences.js';

/** Reported for each appended entry, after it is in the file, in file order. */
export type AppendListener = (seq: number, entry: Entry) => void;

export interface Pending {
  entry: Entry;
  seq: number;
  /** Its idempotency key (append-keys.ts), if it was sent with one. */
  key?: WriterKey | undefined;
}

/** The seq high-water mark of one transcript (see high-water.ts). */
export interface SeqMark {
  get(): number;
  raise(next: number): void;
  reset(): void;
  save(): Promise<void>;
}

/** What a Transcript is made of (SessionFiles builds one per name: session-files.ts). */
export interface TranscriptOptions {
  io: Io;
  /** The .jsonl file, absolute, and its name relative to the state dir (for messages and the log). */
  file: string;
  rel: string;
  /** Its side file (meta), absolute and relative to the state dir. */
  metaFile: string;
  metaRelPath: string;
  durability: Durability;
  log: StoreLog;
  /** Told each appended entry once it is in the file, in order (the change feed). */
  onAppend: AppendListener;
  /** Told each time a compaction replaced the file (status counts them). */
  onCompacted?: () => void;
  /** Its seq high-water mark, so seq never goes back when every copy of the meta is lost. */
  mark: SeqMark;
  /** The write-ahead log its appends go through (durability `sync`), if any. */
  wal?: WriteAheadLog | undefined;
  /** The idempotency keys' log, noted before a keyed append's bytes are written. */
  keys?: AppendKeys | undefined;
}
