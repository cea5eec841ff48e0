// One append-only file (a transcript or a participants journal) on its own commit queue. Appends
// that arrive while a write runs form the next batch: one write, one record in the log (or one
// fdatasync), then every caller is answered. Other work on the file (compaction, removal) runs as
// an exclusive task, in queue order, so nothing can slip between a read-modify-replace and lose
// an append.
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { CommitQueue } from './commit-queue.js';
import { isErrno } from '../common/errno.js';
import { HEAD_BYTES, headOf } from './file-head.js';
import type { Io } from './io.js';
import { LineNotWritten } from './io.js';
import type { AppendFileOptions, AppendJob, AppendState } from './append-file-options.js';
import type { Durability } from './state-store.js';
import { ioError, StoreError } from './store-error.js';
import { repairTornTail } from './torn-tail.js';
import type { WalRecord } from './wal-record.js';

export class AppendFile<T = undefined> {
  private fh: FileHandle | undefined;
  private size = 0;
  private ino = 0;
  /** The file's first bytes (up to HEAD_BYTES), as the last write left them. */
  private prefix: Buffer = Buffer.alloc(0);
  /**
   * What a log record names the file by (file-head.ts): the head of its first bytes that are
   * durable in the file itself, whatever the log holds: its first append's (fdatasynced), or what
   * it held when opened (synced by a checkpoint or the start's replay). Never of bytes only a
   * record keeps: a record damaged or lost must not make the file look like another one at replay.
   */
  private durableHead: string | undefined;
  /** The open made the file and nothing is in it yet: a failed first write removes it. */
  // Stryker disable next-line BooleanLiteral: every batch opens the file first, and the open sets it
  private createdNow = false;
  private readonly queue = new CommitQueue<AppendJob<T>>({
    commit: (batch) => this.writeBatch(batch),
    // A batch ends with the append that passes the compaction trigger: compaction runs right after it.
    batchSize: (waiting) => {
      let size = this.size;
      for (const [i, job] of waiting.entries()) {
        size += job.buf.length;
        if (this.options.cutAfter?.(size)) return i + 1;
      }
      return waiting.length;
    },
  });

  constructor(
    private readonly io: Io,
    readonly file: string,
    readonly rel: string,
    private readonly durability: Durability,
    private readonly options: AppendFileOptions<T>,
  ) {}

  /**
   * Appends `buf` (whole lines) and resolves once it is written (and durable, in sync mode).
   * Enqueues synchronously: appends land in the order of the calls.
   */
  append(buf: Buffer, tag: T): Promise<void> {
    return this.appendJob(buf, tag).done;
  }

  /**
   * `append`, with `skip` decided when its batch is written (what was written before it is
   * known then): true leaves its bytes out, and `state.skipped` says so once `done` resolves.
   */
  appendJob(buf: Buffer, tag: T, skip?: (included: ReadonlySet<AppendState>) => boolean): { state: AppendState; done: Promise<void> } {
    const job: AppendJob<T> = { buf, tag, skip, written: false, skipped: false };
    return { state: job, done: this.queue.push(job) };
  }

  /**
   * Runs `run` alone, after everything queued before it; the file is closed while it runs. A task
   * that replaces or removes the file (`replaces`, the default) first empties the write-ahead log,
   * and fails without running when that fails (a record must never outlive its file).
   */
  exclusive<R>(run: () => Promise<R>, { replaces = true }: { replaces?: boolean } = {}): Promise<R> {
    return this.queue.exclusive(async () => {
      await this.closeHandle();
      if (replaces) {
        this.durableHead = undefined; // another file may be at the name after it
        await this.options.wal?.checkpoint();
      }
      return run();
    });
  }

  /** The head (file-head.ts) of the file as the last write left it: its first bytes, up to HEAD_BYTES. */
  get head(): string {
    return headOf(this.prefix);
  }

  /** Resolves when the queue is empty. */
  settled(): Promise<void> {
    return this.queue.settled();
  }

  async close(): Promise<void> {
    await this.settled();
    await this.closeHandle();
  }

  /** Closes the handle; a failing close is logged (every write through it was already answered). */
  private async closeHandle(): Promise<void> {
    const fh = this.fh;
    this.fh = undefined;
    try {
      await fh?.close();
    } catch (err) {
      this.options.log.error(`closing ${this.rel} failed`, err);
    }
  }

  private async writeBatch(batch: AppendJob<T>[]): Promise<void> {
    const included = new Set<AppendState>();
    for (const j of batch) {
      if (j.skip?.(included)) j.skipped = true;
      else included.add(j);
    }
    // Stryker disable next-line ConditionalExpression: the filter of a batch without skips holds the same jobs
    const jobs = included.size === batch.length ? batch : batch.filter((j) => !j.skipped);
    if (jobs.length === 0) return;
    let fh = this.fh;
    if (!fh) {
      try {
        fh = await this.openForAppend();
      } catch (err) {
        throw ioError('append to', this.rel, err);
      }
    }
    // Stryker disable next-line ConditionalExpression: a concat of one buffer holds the same bytes (the single case only saves the copy)
    const buf = jobs.length === 1 ? (jobs[0] as AppendJob<T>).buf : Buffer.concat(jobs.map((j) => j.buf));
    const before = this.size;
    if (this.options.beforeWrite) {
      const offsets: number[] = [];
      let at = before;
      for (const j of jobs) {
        offsets.push(at);
        at += j.buf.length;
      }
      await this.options.beforeWrite(jobs.map((j) => j.tag), this.ino, offsets, jobs.map((j) => j.buf));
    }
    const createdNow = this.createdNow;
    this.createdNow = false;
    try {
      const wal = this.durability === 'sync' ? this.options.wal : undefined;
      const tags = wal && jobs.map((j) => j.tag);
      const s = tags && this.options.nextSeq?.(tags);
      const k = tags && this.options.walKeys?.(tags);
      const carried = { ...(s === undefined ? {} : { s }), ...(k === undefined ? {} : { k }) };
      // Named by inode and by its durable first bytes (an inode number is reused by the next new file).
      const record = (): WalRecord => ({ f: this.rel, i: this.ino, h: this.durableHead ?? headOf(this.prefix), o: before, d: buf.toString('utf8'), ...carried });
      if (wal && before > 0 && wal.idle) {
        // Nothing else is being logged: the bytes, their record and the log's sync in one
        // hand-off (the record is written only once the bytes are). A busy log keeps its batch
        // for the records that come meanwhile, so the bytes are written at once, below.
        await wal.record(record(), { fh, buf });
      } else {
        // A file's first bytes are made durable in the file itself (one fdatasync per new or
        // emptied file): a log record names its file by them, and a record at offset 0 would have
        // none to name it by (an inode number is reused by the next new file).
        if (this.durability === 'sync' && (!wal || before === 0)) await this.io.writeSynced(fh, buf);
        else await this.io.write(fh, buf);
        if (wal && before > 0) await wal.record(record());
        else if (wal && (s !== undefined || k !== undefined)) {
          // The bytes are durable in the file already: the record carries only the seq after them
          // and their keys, and names the file by those first bytes (replay checks it is still the
          // file that holds them, puts nothing back, and keeps the keys and the seq).
          await wal.record({ f: this.rel, i: this.ino, h: headOf(buf), o: 0, d: '', ...carried });
        }
      }
      this.size = before + buf.length;
    } catch (err) {
      await this.undoAppend(fh, before, createdNow);
      // The log's own error names the log; the caller asked about this file, so name both.
      if (err instanceof LineNotWritten) throw ioError('append to', this.rel, err.cause);
      throw err instanceof StoreError
        ? new StoreError('io', `append to ${this.rel}: ${err.code ?? 'EIO'}: its write-ahead record failed (${err.message})`, err.data, err.code)
        : ioError('append to', this.rel, err);
    }
    if (this.prefix.length < HEAD_BYTES) this.prefix = Buffer.concat([this.prefix, buf]).subarray(0, HEAD_BYTES);
    if (before === 0) this.durableHead = headOf(this.prefix);
    for (const j of jobs) j.written = true;
    this.options.written?.(jobs.map((j) => j.tag), this.size);
    if (!this.options.afterCut || !this.options.cutAfter?.(this.size)) {
      await this.options.afterWrite?.();
      return;
    }
    // As Go's AppendTranscript, the append that triggers compaction returns after it.
    await this.closeHandle();
    // Compaction replaces the file: the log may hold no record of the old one by then. If it
    // cannot be emptied, the file stays as it is and the next append tries again (as Go's does).
    try {
      await this.options.wal?.checkpoint();
    } catch (err) {
      this.options.log.error(`compaction of ${this.rel} skipped: the write-ahead log could not be checkpointed first; retried after the next append`, err);
      return;
    }
    this.durableHead = undefined; // the compacted file is named by its own first bytes
    await this.options.afterCut();
  }

  /**
   * No partial line may survive a failed append: the file is cut back to what it was, and a file
   * this append created goes again. When even that fails, the handle is dropped: the next open
   * repairs the tail (a fragment Go's reader would skip), and the failure is logged.
   */
  private async undoAppend(fh: FileHandle, before: number, createdNow: boolean): Promise<void> {
    try {
      if (createdNow) {
        await this.closeHandle();
        this.durableHead = undefined;
        await this.io.unlink(this.file);
      } else {
        await this.io.truncate(fh, before);
      }
    } catch (err) {
      this.options.log.error(`cutting ${this.rel} back after a failed append failed; its tail is repaired before the next append`, err);
      await this.closeHandle();
    }
  }

  private async openForAppend(): Promise<FileHandle> {
    const dir = path.dirname(this.file);
    await this.io.mkdir(dir, 0o700);
    let created = true;
    let fh: FileHandle;
    try {
      fh = await this.io.open(this.file, 'ax', 0o600);
    } catch (err) {
      if (!isErrno(err, 'EEXIST')) throw err;
      created = false;
      fh = await this.io.open(this.file, 'a+', 0o600);
    }
    try {
      this.size = created ? 0 : await this.io.size(fh);
      if (!created && this.size > 0) this.size = await repairTornTail(this.io, fh, this.size, this.options.tornTail, this.durability === 'sync');
      this.prefix = Buffer.alloc(Math.min(this.size, HEAD_BYTES));
      if (this.prefix.length > 0) await this.io.read(fh, this.prefix, 0);
      if (created && this.durability === 'sync') {
        await this.io.syncDir(dir);
        await this.io.syncDir(path.dirname(dir));
      }
    } catch (err) {
      await this.closeAfterFailure(fh);
      throw err;
    }
    this.fh = fh;
    this.createdNow = created;
    const ino = await this.io.inode(fh);
    // The same file opened again (after a read, or a dropped handle) keeps what it was named by.
    if (this.size === 0) this.durableHead = undefined;
    else if (this.durableHead === undefined || ino !== this.ino) this.durableHead = headOf(this.prefix);
    this.ino = ino;
    this.options.opened?.(this.size, this.ino);
    return fh;
  }

  /**
   * Closes a handle after its open failed part-way; a close that fails too is logged (the caller
   * hears of the first failure: its errno's reason is all a StoreError keeps of its message).
   */
  private async closeAfterFailure(fh: FileHandle): Promise<void> {
    try {
      await fh.close();
    } catch (err) {
      this.options.log.error(`closing ${this.rel} failed as well, after a failed open`, err);
    }
  }
}
