// The write-ahead log behind `--durability sync`: every append to a transcript or a journal is
// also recorded here (wal-record.ts), and the record's fdatasync is what makes the append durable.
// One log shared by every file means one fdatasync per batch, whatever the number of sessions
// (per-file fdatasyncs are bound by how many the disk does concurrently). The Go-format files
// themselves are written without a sync, except a file's first append (append-file.ts); after a
// crash, `replayWal` (wal-replay.ts) puts back any record they lack.
//
// The log is emptied (a checkpoint: every file written since is fdatasync'ed first) when it grows
// past a bound and before a file is replaced or removed, so no record can outlive its file. Every
// checkpoint runs inside a call that waits for it (the append whose record crossed the bound, a
// compaction, a removal): nothing is written once the calls have returned, and a close leaves the
// records for the next start's replay.
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { CommitQueue } from './commit-queue.js';
import type { Io } from './io.js';
import { ioError } from './store-error.js';
import type { StoreLog } from './store-log.js';
import type { WalRecord } from './wal-record.js';
import { encodeRecord, WAL_REL } from './wal-record.js';

/** Past this size the log is checkpointed: replay after a crash stays short. */
const CHECKPOINT_BYTES = 16 * 1024 * 1024;

interface Pending {
  readonly bytes: Buffer;
  readonly file: string;
  /** The bytes the record is about, not yet written to their file: written first, in the same hand-off (`record`'s `line`). */
  readonly line: { readonly fh: FileHandle; readonly buf: Buffer } | undefined;
}

/**
 * Files a checkpoint syncs at once. Each sync opens its file: a checkpoint after writes to a few
 * hundred sessions that opened them all at once failed with EMFILE under `ulimit -n 256` (and
 * 1024 with more sessions), and a failed checkpoint is retried the same way, so the log never
 * emptied. A few at a time fit in the descriptors the store keeps in reserve (name-cache.ts).
 */
export const SYNCS_AT_ONCE = 16;

/** How a write-ahead log is opened. */
export interface WalOptions {
  /** fdatasyncs one of the store's files by its name relative to the state dir, for checkpoints. */
  syncFile: (rel: string) => Promise<void>;
  log: StoreLog;
  /** Runs before a checkpoint empties the log: what only its records said (the seq after each) is written down first. */
  beforeEmpty: () => Promise<void>;
  /** Size past which the log is checkpointed (default CHECKPOINT_BYTES). */
  checkpointBytes?: number | undefined;
  /** The log's name relative to the state dir (default WAL_REL; another state file's is in its side folder). */
  rel?: string;
}

export class WriteAheadLog {
  private readonly queue = new CommitQueue<Pending>({ commit: (batch) => this.commit(batch) });
  private size = 0;
  /** Files written since the last checkpoint, which must be synced before the log is emptied. */
  private readonly dirty = new Set<string>();
  /** A checkpoint queued and not yet started: later callers share it. */
  private queuedCheckpoint: Promise<void> | undefined;
  /** Set when a failed batch could not be cut back: no record is taken until a checkpoint succeeds. */
  private poisoned: Error | undefined;
  /** After a failed checkpoint, the size at which an append tries the next one, and the backoff after that. */
  private retryAtSize = 0;
  private retryBytes: number;

  /** Nothing queued or being written: a record pushed now is written at once, alone. */
  get idle(): boolean {
    return this.queue.idle;
  }

  /** Bytes in the log not yet checkpointed (`status` reports them). */
  get bytes(): number {
    return this.size;
  }

  private readonly io: Io;
  /** The log's name relative to the state dir, for messages. */
  private readonly rel: string;
  private readonly syncFile: (rel: string) => Promise<void>;
  private readonly checkpointBytes: number;
  private readonly log: StoreLog;
  private readonly beforeEmpty: () => Promise<void>;

  private constructor(io: Io, o: WalOptions, private readonly fh: FileHandle) {
    this.io = io;
    this.rel = o.rel ?? WAL_REL;
    this.syncFile = o.syncFile;
    this.checkpointBytes = o.checkpointBytes ?? CHECKPOINT_BYTES;
    this.retryBytes = Math.ceil(this.checkpointBytes / 16);
    this.log = o.log;
    this.beforeEmpty = o.beforeEmpty;
  }

  /** Opens the (already replayed and emptied) log in the state dir `dir`. */
  static async open(io: Io, dir: string, o: WalOptions): Promise<WriteAheadLog> {
    const rel = o.rel ?? WAL_REL;
    const file = path.join(dir, rel);
    try {
      await io.mkdir(path.dirname(file), 0o700);
      const fh = await io.open(file, 'a+', 0o600);
      const wal = new WriteAheadLog(io, o, fh);
      wal.size = await io.size(fh);
      return wal;
    } catch (err) {
      throw ioError('open', rel, err);
    }
  }

  /**
   * Records an append already written to its file; resolves once the record is on disk. Records
   * that arrive while a sync runs share the next one. A record that leaves the log past its bound
   * resolves only after the checkpoint it makes due (shared by every record waiting then): the
   * checkpoint's writes belong to this call, never to after it. A failed checkpoint fails no
   * append (its record is durable): it is logged, and tried again by the append that has grown
   * the log by a further backoff (1/16 of the bound, doubling up to the bound), so a failing disk
   * costs a sync attempt per so many bytes, not per append, and no timer writes later. A log that
   * could not be cut back after a failed write takes no record until a checkpoint empties it: the
   * next record tries that first.
   *
   * With `line`, the bytes the record is about are not written yet: they are appended to their
   * file first, in the same hand-off as the record and its sync (Io.writeLogged), and the record
   * goes to the log only once they are there. A line that fails rejects with LineNotWritten (its
   * record left out); the other records of its batch are kept.
   */
  async record(r: WalRecord, line?: { fh: FileHandle; buf: Buffer }): Promise<void> {
    const bytes = encodeRecord(r);
    if (this.poisoned) await this.checkpoint().catch(() => undefined); // failure logged by checkpoint; the push below then refuses
    await this.queue.push({ bytes, file: r.f, line });
    if (this.size > this.checkpointBytes && this.size >= this.retryAtSize) {
      await this.checkpoint().catch((err: unknown) => {
        this.retryAtSize = this.size + this.retryBytes;
        this.retryBytes = Math.min(this.retryBytes * 2, this.checkpointBytes);
        this.log.error(
          `checkpoint of ${this.rel} failed; appends stay durable (their records are kept in the log, now ${this.size} bytes, and replayed at the next start); `
          + `tried again by the append that takes the log past ${this.retryAtSize} bytes`,
          err,
        );
      });
    }
  }

  /**
   * Syncs every file written since the last checkpoint, then empties the log; runs alone between
   * batches (records arriving meanwhile wait for it). Callers that come while one is queued share it.
   */
  checkpoint(): Promise<void> {
    if (this.queuedCheckpoint) return this.queuedCheckpoint;
    let started = false;
    const run = this.queue.exclusive(async () => {
      started = true;
      this.queuedCheckpoint = undefined;
      try {
        await this.empty();
      } catch (err) {
        this.log.checkpointFailed(err);
        throw err;
      }
      this.log.checkpointSucceeded();
      this.retryAtSize = 0;
      this.retryBytes = Math.ceil(this.checkpointBytes / 16);
    });
    // An idle queue starts the task at once: only one still waiting is shared.
    if (!started) this.queuedCheckpoint = run;
    return run;
  }

  /** Resolves when every record and checkpoint queued so far is done. */
  settled(): Promise<void> {
    return this.queue.settled();
  }

  /**
   * Finishes what is queued and closes the log, writing nothing: the records it holds are the next
   * start's to replay (a close must not write once its callers have their answers).
   */
  async close(): Promise<void> {
    await this.queue.settled();
    try {
      await this.fh.close();
    } catch (err) {
      this.log.error(`closing ${this.rel} failed`, err);
    }
  }

  private async empty(): Promise<void> {
    try {
      const files = [...this.dirty];
      for (let i = 0; i < files.length; i += SYNCS_AT_ONCE) await Promise.all(files.slice(i, i + SYNCS_AT_ONCE).map((rel) => this.syncFile(rel)));
      for (const rel of files) this.dirty.delete(rel);
      // What only the records said (the seq after each) is written down before they go.
      await this.beforeEmpty();
      await this.io.truncate(this.fh, 0);
      // The log is empty from here whether or not its sync succeeds (the files its records named
      // are synced): a later cut-back to a size the log no longer has would pad it with zeros
      // behind a refused record, which the next start would replay.
      this.size = 0;
      this.poisoned = undefined;
      await this.io.datasync(this.fh);
    } catch (err) {
      throw ioError('checkpoint', this.rel, err);
    }
  }

  private async commit(batch: Pending[]): Promise<readonly (Error | undefined)[] | void> {
    if (this.poisoned) throw this.poisoned;
    const before = this.size;
    let lines: readonly (Error | undefined)[] | undefined;
    try {
      if (batch.some((p) => p.line)) {
        lines = await this.io.writeLogged(this.fh, batch.map((p) => ({ line: p.line, record: p.bytes })));
      } else {
        // Stryker disable next-line ConditionalExpression: a concat of one buffer holds the same bytes (the single case only saves the copy)
        await this.io.writeSynced(this.fh, batch.length === 1 ? (batch[0] as Pending).bytes : Buffer.concat(batch.map((p) => p.bytes)));
      }
      this.size = before + batch.reduce((n, p, i) => (lines?.[i] ? n : n + p.bytes.length), 0);
    } catch (err) {
      const e = ioError('append to', this.rel, err);
      // Records of a failed batch must never be replayed: their appends were refused and cut back.
      try {
        await this.io.truncate(this.fh, before);
      } catch (cutErr) {
        this.poisoned = ioError('append to', this.rel, cutErr);
        this.log.error(`${this.rel} could not be cut back after a failed write; appends are refused until a checkpoint empties it (the next append tries one)`, cutErr);
      }
      throw e;
    }
    for (const [i, p] of batch.entries()) if (!lines?.[i]) this.dirty.add(p.file);
    return lines;
  }
}
