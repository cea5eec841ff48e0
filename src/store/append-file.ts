// One append-only file (a transcript or a participants journal) with its own queue. Appends that
// arrive while a write runs form the next batch: one write(2), one fdatasync, then every caller
// is answered. Other work on the file (compaction, removal) runs alone, in queue order, so nothing
// can slip between a read-modify-replace and lose an append.
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Io } from './io.js';
import type { Durability } from './state-store.js';
import { ioError, StoreError } from './store-error.js';
import type { WriteAheadLog } from './wal.js';

type AppendJob<T> = { kind: 'append'; buf: Buffer; tag: T; resolve(): void; reject(err: unknown): void };
type TaskJob = { kind: 'task'; replaces: boolean; run(): Promise<unknown>; resolve(v: unknown): void; reject(err: unknown): void };
type Job<T> = AppendJob<T> | TaskJob;

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
  /** Told the file's size and inode once it is open (and its tail repaired). */
  opened?(size: number, ino: number): void;
  /**
   * In sync mode, where appends become durable: their record in the shared log (one fdatasync
   * for every file's appends) instead of an fdatasync of this file. Its checkpoint runs before
   * any exclusive task, so no record outlives the file it is about.
   */
  wal?: WriteAheadLog;
}

export class AppendFile<T = undefined> {
  private fh: FileHandle | undefined;
  private size = 0;
  private ino = 0;
  /** The open made the file and nothing is in it yet: a failed first write removes it. */
  private createdNow = false;
  private queue: Job<T>[] = [];
  private draining: Promise<void> | undefined;

  constructor(
    private readonly io: Io,
    readonly file: string,
    readonly rel: string,
    private readonly durability: Durability,
    private readonly options: AppendFileOptions<T>,
  ) {}

  /**
   * Appends `buf` (whole lines) and resolves once it is written (and synced, in sync mode).
   * Enqueues synchronously: appends land in the order of the calls.
   */
  append(buf: Buffer, tag: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ kind: 'append', buf, tag, resolve, reject });
      this.draining ??= this.drain();
    });
  }

  /**
   * Runs `run` alone, after everything queued before it; the file is closed while it runs. A task
   * that replaces or removes the file (`replaces`, the default) first empties the write-ahead log.
   */
  exclusive<T>(run: () => Promise<T>, { replaces = true }: { replaces?: boolean } = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ kind: 'task', replaces, run, resolve: resolve as (v: unknown) => void, reject });
      this.draining ??= this.drain();
    });
  }

  /** Resolves when the queue is empty. */
  async settled(): Promise<void> {
    while (this.draining) await this.draining;
  }

  async close(): Promise<void> {
    await this.settled();
    await this.closeHandle();
  }

  private async closeHandle(): Promise<void> {
    const fh = this.fh;
    this.fh = undefined;
    await fh?.close().catch(() => undefined);
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const head = this.queue[0] as Job<T>;
        if (head.kind === 'task') {
          this.queue.shift();
          await this.closeHandle();
          try {
            if (head.replaces) await this.options.wal?.checkpoint();
            head.resolve(await head.run());
          } catch (err) {
            head.reject(err);
          }
          continue;
        }
        await this.writeBatch();
      }
    } finally {
      this.draining = undefined;
    }
  }

  private takeBatch(): { jobs: AppendJob<T>[]; cut: boolean } {
    const jobs: AppendJob<T>[] = [];
    let size = this.size;
    while (this.queue.length > 0 && this.queue[0]?.kind === 'append') {
      const job = this.queue.shift() as AppendJob<T>;
      jobs.push(job);
      size += job.buf.length;
      if (this.options.cutAfter?.(size)) return { jobs, cut: true };
    }
    return { jobs, cut: false };
  }

  private async writeBatch(): Promise<void> {
    let fh: FileHandle;
    try {
      fh = await this.openForAppend();
    } catch (err) {
      const e = ioError('append to', this.rel, err);
      // Only the appends ahead of the next task fail: a task (removal) queued behind them must
      // still run and answer, and appends after it get their own try.
      while (this.queue[0]?.kind === 'append') (this.queue.shift() as AppendJob<T>).reject(e);
      return;
    }
    const { jobs, cut } = this.takeBatch();
    const buf = jobs.length === 1 ? (jobs[0] as { buf: Buffer }).buf : Buffer.concat(jobs.map((j) => j.buf));
    const before = this.size;
    const createdNow = this.createdNow;
    this.createdNow = false;
    try {
      await this.io.write(fh, buf);
      if (this.durability === 'sync') {
        const wal = this.options.wal;
        if (wal) await wal.record({ f: this.rel, i: this.ino, o: before, d: buf.toString('utf8') });
        else await this.io.datasync(fh);
      }
      this.size = before + buf.length;
    } catch (err) {
      // No partial line may survive a failed append: cut the file back to what it was, and a
      // file this append created goes again.
      try {
        if (createdNow) {
          await this.closeHandle();
          await this.io.unlink(this.file);
        } else {
          await this.io.truncate(fh, before);
        }
      } catch {
        await this.closeHandle(); // reopened (and its tail repaired) by the next append
      }
      // The log's own error names the log; the caller asked about this file, so name both.
      const e = err instanceof StoreError ? new StoreError('io', `append to ${this.rel}: ${err.code ?? 'EIO'}: its write-ahead record failed (${err.message})`, err.data, err.code)
        : ioError('append to', this.rel, err);
      for (const job of jobs) job.reject(e);
      return;
    }
    this.options.written?.(jobs.map((j) => j.tag), this.size);
    if (cut && this.options.afterCut) {
      // As Go's AppendTranscript, the append that triggers compaction returns after it.
      await this.closeHandle();
      // Compaction replaces the file: the log may hold no record of the old one by then. If it
      // cannot be emptied, the file stays as it is and the next append tries again (as Go's does).
      const clean = await (this.options.wal?.checkpoint() ?? Promise.resolve()).then(() => true, () => false);
      if (clean) await this.options.afterCut();
    }
    for (const job of jobs) job.resolve();
  }

  private async openForAppend(): Promise<FileHandle> {
    if (this.fh) return this.fh;
    const dir = path.dirname(this.file);
    await this.io.mkdir(dir, 0o700);
    let created = true;
    let fh: FileHandle;
    try {
      fh = await this.io.open(this.file, 'ax', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      created = false;
      fh = await this.io.open(this.file, 'a+', 0o600);
    }
    try {
      this.size = created ? 0 : await this.io.size(fh);
      if (!created && this.size > 0) await this.repairTail(fh);
      if (created && this.durability === 'sync') {
        await this.io.syncDir(dir);
        await this.io.syncDir(path.dirname(dir));
      }
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
    this.fh = fh;
    this.createdNow = created;
    this.ino = await this.io.inode(fh);
    this.options.opened?.(this.size, this.ino);
    return fh;
  }

  private async repairTail(fh: FileHandle): Promise<void> {
    const last = Buffer.alloc(1);
    await this.io.read(fh, last, this.size - 1);
    if (last[0] === 0x0a) return;
    const start = await lastLineStart(this.io, fh, this.size);
    const fragment = Buffer.alloc(this.size - start);
    await this.io.read(fh, fragment, start);
    if (this.options.tornTail(fragment) === 'keep') {
      await this.io.write(fh, Buffer.from('\n'));
      this.size += 1;
    } else {
      await this.io.truncate(fh, start);
      this.size = start;
    }
    if (this.durability === 'sync') await this.io.datasync(fh);
  }
}

/** Offset just past the last "\n" before `size`, reading backwards in 64 KiB steps. */
async function lastLineStart(io: Io, fh: FileHandle, size: number): Promise<number> {
  const step = 64 * 1024;
  let end = size;
  while (end > 0) {
    const from = Math.max(0, end - step);
    const buf = Buffer.alloc(end - from);
    await io.read(fh, buf, from);
    const i = buf.lastIndexOf(0x0a);
    if (i >= 0) return from + i + 1;
    end = from;
  }
  return 0;
}
