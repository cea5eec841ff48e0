// A session's files: its transcript (transcripts/<name>.jsonl, with its meta, summary and seq
// mark) and its participants journal (participants/<name>.log). One Transcript and one
// Participants object per name, kept in a bounded cache (name-cache.ts) so a name's appends
// queue in one place and its loaded numbers are not read again; each object runs its file's
// appends, reads, compaction and removal. Which of these may run, and when, is decided before
// (write-order.ts).
import type { AppendKeys } from './append-keys.js';
import path from 'node:path';
import type { StoreCounters } from './store-counters.js';
import type { ChangeFeed } from './change-feed.js';
import type { HighWater } from './high-water.js';
import type { Io } from './io.js';
import { NameCache } from './name-cache.js';
import { Participants } from './participants.js';
import { assertPathComponent, participantsRel, transcriptRel } from './paths.js';
import type { Durability } from './state-store.js';
import type { StoreLog } from './store-log.js';
import type { SeqMark } from './transcript-options.js';
import { Transcript } from './transcript.js';
import { metaRel } from './transcript-meta.js';
import type { WriteAheadLog } from './wal.js';

/** What a session's files are made with. */
export interface SessionFilesOptions {
  io: Io;
  /** The state dir, and this state file's side folder relative to it (paths.ts, sideOf). */
  dir: string;
  side: string;
  durability: Durability;
  log: StoreLog;
  wal: WriteAheadLog | undefined;
  marks: HighWater;
  /** The idempotency keys' log of transcript appends, noted before a keyed append is written. */
  appendKeys: AppendKeys;
  feed: ChangeFeed;
  /** Where compactions are counted (status). */
  counters: StoreCounters;
  /** Whether `name` has a session row now (pending mutations included): idle objects without one are not kept. */
  hasRow: (name: string) => boolean;
  /** How many idle names keep their Transcript and Participants objects. */
  cachedNames: number;
}

export class SessionFiles {
  private readonly transcripts: NameCache<Transcript>;
  private readonly journals: NameCache<Participants>;

  constructor(private readonly o: SessionFilesOptions) {
    const onError = (message: string, err?: unknown): void => o.log.error(message, err);
    this.transcripts = new NameCache(o.cachedNames, (name) => this.newTranscript(name), o.hasRow, onError);
    this.journals = new NameCache(o.cachedNames, (name) => this.newJournal(name), o.hasRow, onError);
  }

  /** Names with a cached Transcript and Participants object now (the bound in docs/limits.md). */
  get cachedNames(): { transcripts: number; journals: number } {
    return { transcripts: this.transcripts.size, journals: this.journals.size };
  }

  /** Runs `fn` on the name's transcript object, kept (within the cache bound) while it has a row. */
  withTranscript<R>(name: string, fn: (t: Transcript) => Promise<R>): Promise<R> {
    assertPathComponent(name);
    return this.transcripts.use(name, fn);
  }

  /** The same for the name's participants journal. */
  withJournal<R>(name: string, fn: (j: Participants) => Promise<R>): Promise<R> {
    assertPathComponent(name);
    return this.journals.use(name, fn);
  }

  /**
   * `withTranscript` for an append, whose name was checked already (WriteOrder.forAppend): the
   * object is kept even without a row, since the file it writes will grow (name-cache.ts).
   */
  appendingTranscript<R>(name: string, fn: (t: Transcript) => Promise<R>): Promise<R> {
    return this.transcripts.use(name, fn, { writes: true });
  }

  /** The same for the name's participants journal. */
  appendingJournal<R>(name: string, fn: (j: Participants) => Promise<R>): Promise<R> {
    return this.journals.use(name, fn, { writes: true });
  }

  /** Resolves when every queued append, compaction and removal is done. */
  async settled(): Promise<void> {
    await Promise.all([this.transcripts.settled(), this.journals.settled()]);
  }

  /** Closes every object (each transcript leaves its summary). */
  async close(): Promise<void> {
    await Promise.all([this.transcripts.close(), this.journals.close()]);
  }

  private seqMark(name: string): SeqMark {
    const m = this.o.marks;
    return { get: () => m.get(name), raise: (next) => m.raise(name, next), reset: () => m.reset(name), save: () => m.save() };
  }

  private newTranscript(name: string): Transcript {
    const { io, dir, side, durability, log, wal, feed, appendKeys } = this.o;
    const rel = transcriptRel(name);
    const meta = metaRel(name, side);
    return new Transcript({
      io, file: path.join(dir, rel), rel, metaFile: path.join(dir, meta), metaRelPath: meta,
      durability, log, wal, mark: this.seqMark(name), keys: appendKeys,
      onAppend: (seq, entry) => feed.transcriptAppended(name, seq, entry),
      onCompacted: () => this.o.counters.compactions++,
    });
  }

  private newJournal(name: string): Participants {
    const { io, dir, durability, log, wal, feed } = this.o;
    const rel = participantsRel(name);
    return new Participants({
      io, file: path.join(dir, rel), rel, durability, log, wal,
      onAdd: (userId) => feed.participantAdded(name, userId),
    });
  }
}
