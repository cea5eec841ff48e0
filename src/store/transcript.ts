// One session's transcript, transcripts/<name>.jsonl: Go-identical lines, appended through the
// file's queue, compacted exactly as Go compacts (but inside that queue, so no append is lost).
// Being the only writer, it keeps what readers ask for in memory: the newest ts, the entry count
// and seq numbers, and usage over every entry ever appended, compacted ones included.
import path from 'node:path';
import { AppendFile } from './append-file.js';
import type { AppendKeys } from './append-keys.js';
import { compactionSlots } from './compaction-slots.js';
import { goDecodeUtf8, wellFormed } from './go-text.js';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import { ioError, StoreError } from './store-error.js';
import type { StoreLog } from './store-log.js';
import { COMPACT_TRIGGER_BYTES, entryLine } from './transcript-compact.js';
import { removeMeta, removeSummary, summaryBeside, writeSummary } from './transcript-meta.js';
import type { AppendListener, Pending, SeqMark, TranscriptOptions } from './transcript-options.js';
import type { Entry } from './transcript-read.js';
import { parseLine } from './transcript-read.js';
import { noteKeys, walKeys } from './transcript-keys.js';
import type { ForwardCursor, ForwardPage, Page } from './transcript-pages.js';
import { forwardOf, pageOf } from './transcript-pages.js';
import { replaceWithNewest } from './transcript-replace.js';
import type { Snapshot } from './transcript-scan.js';
import { emptySnapshot, scanTranscript } from './transcript-scan.js';
import type { Usage } from './usage.js';
import { addEntry, toUsage } from './usage.js';
import type { WriterKey } from './writer-sequences.js';

/**
 * Bytes appended after which the append that passes them writes the transcript's summary again
 * (transcript-meta.ts): a start scans at most this much of each transcript (its tail past the
 * summary) instead of the whole file, and the cost is one unsynced replace per 64 KiB of appends.
 */
export const SUMMARY_EVERY_BYTES = 64 * 1024;

export class Transcript {
  private readonly appender: AppendFile<Pending>;
  private snap: Snapshot | undefined;
  private loading: Promise<Snapshot> | undefined;
  /** How many of the file's first bytes the summary on disk describes (0: none for this file). */
  private summarized = 0;

  readonly file: string;
  readonly rel: string;
  private readonly io: Io;
  private readonly metaFile: string;
  private readonly metaRelPath: string;
  private readonly log: StoreLog;
  private readonly onAppend: AppendListener;
  private readonly onCompacted: (() => void) | undefined;
  private readonly mark: SeqMark;
  private readonly keys: AppendKeys | undefined;

  constructor(o: TranscriptOptions) {
    const { io, file, rel, durability, log, wal } = o;
    this.io = io;
    this.file = file;
    this.rel = rel;
    this.metaFile = o.metaFile;
    this.metaRelPath = o.metaRelPath;
    this.log = log;
    this.onAppend = o.onAppend;
    this.onCompacted = o.onCompacted;
    this.mark = o.mark;
    this.keys = o.keys;
    this.appender = new AppendFile<Pending>(io, file, rel, durability, {
      wal,
      log,
      // Repair never changes what a read returns: a fragment Go would parse is kept, any other dropped.
      tornTail: (fragment) => (parseLine(goDecodeUtf8(fragment)) ? 'keep' : 'drop'),
      cutAfter: (size) => size > COMPACT_TRIGGER_BYTES,
      afterCut: () => this.compact(),
      opened: (size, ino) => {
        if (this.snap) Object.assign(this.snap, { size, ino });
      },
      written: (pending, size) => this.written(pending, size),
      afterWrite: () => this.keepSummary(),
      ...(o.keys ? { beforeWrite: (pending: Pending[], ino: number, offsets: number[], bufs: Buffer[]) => noteKeys(o.keys as AppendKeys, rel, this.snap as Snapshot, pending, ino, offsets, bufs) } : {}),
      // Each log record carries the seq after it, so a replay raises the high-water mark past it.
      nextSeq: (pending) => (this.snap ? this.snap.firstSeq + this.snap.count + pending.length : undefined),
      // In sync mode a key is durable in the batch's log record (its line in append-keys.log is synced only by a checkpoint).
      walKeys: (pending) => walKeys(this.snap as Snapshot, pending),
    });
  }

  /** Appends one entry; resolves with its seq once its line is in the file. */
  append(raw: Entry, key?: WriterKey): Promise<number> {
    const entry = wellFormed(raw); // what the file will hold, so memory and notifications agree
    let line: Buffer;
    try {
      line = entryLine(entry);
    } catch (err) {
      return Promise.reject(err);
    }
    const pending: Pending = { entry, seq: -1, key };
    // Loaded first (once per process), so seq numbers continue the file's; enqueued in call order
    // because every append of this transcript waits on the same, already-settled promise.
    const enqueue = (): Promise<number> => this.appender.append(line, pending).then(() => pending.seq);
    return this.snap ? enqueue() : this.load().then(enqueue);
  }

  /** The newest `limit` entries (all for 0), in file order; a missing file has none. */
  async read(limit: number): Promise<Entry[]> {
    return (await this.page({ limit })).entries;
  }

  /**
   * The newest `limit` entries with seq < `before`. The page is cut from one version of the file
   * (a compaction in between is retried), so paging back with before = firstSeq has no gap or
   * duplicate whatever is appended meanwhile.
   */
  async page({ limit = 0, before }: { limit?: number; before?: number }): Promise<Page> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const got = await this.versionPage(await this.load(), (snap, stillCurrent) => pageOf(this.io, this.file, this.rel, snap, stillCurrent, limit, before));
      if (got) return got;
    }
    // Compactions keep replacing the file under the read: read inside the file's queue, where
    // nothing can replace it (appends wait behind this one read).
    return this.appender.exclusive(async () => {
      const got = await this.versionPage(await this.load(), (snap, stillCurrent) => pageOf(this.io, this.file, this.rel, snap, stillCurrent, limit, before));
      if (got) return got;
      throw new StoreError('io', `read ${this.rel}: the file changed under a read that held its queue`, { code: 'EIO' }, 'EIO');
    }, { replaces: false });
  }

  /**
   * At most `limit` entries (and about `maxBytes` of their lines; one longer entry comes whole)
   * with seq >= `from`, oldest first, as far as the file still has them (compaction may have
   * dropped the oldest: then `firstSeq` > `from`). Passing back the `cursor` of the page before
   * reads on from where it stopped; without one (or once the file was replaced) the start is
   * found by reading from whichever end of the file is nearer.
   */
  async pageFrom(from: number, { limit, maxBytes }: { limit: number; maxBytes: number }, cursor?: ForwardCursor): Promise<ForwardPage> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const got = await this.versionPage(await this.load(), (snap, stillCurrent) => forwardOf(this.io, this.file, this.rel, snap, stillCurrent, { from, limit, maxBytes, cursor }));
      if (got) return got;
    }
    return this.appender.exclusive(async () => {
      const got = await this.versionPage(await this.load(), (snap, stillCurrent) => forwardOf(this.io, this.file, this.rel, snap, stillCurrent, { from, limit, maxBytes, cursor }));
      if (got) return got;
      throw new StoreError('io', `read ${this.rel}: the file changed under a read that held its queue`, { code: 'EIO' }, 'EIO');
    }, { replaces: false });
  }

  /** Runs `read` on the file version `snap` describes, telling it how to see whether that version is still the file. */
  private versionPage<P>(snap: Snapshot, read: (snap: Snapshot, stillCurrent: () => boolean) => Promise<P>): Promise<P> {
    const { generation } = snap;
    return read(snap, () => this.snap === snap && snap.generation === generation);
  }

  /** The ts of the last entry a full read would return, or "" (Go's ReadTranscriptLast). */
  async last(): Promise<string> {
    return (await this.load()).lastTs;
  }

  /** Usage over every entry ever appended, compaction's included. O(1) once loaded. */
  async usage(): Promise<Usage> {
    return toUsage((await this.load()).total);
  }

  /**
   * Deletes the file (and its meta) after every append made before this call; `removed` says
   * whether there was one. An append made while the transcript was still loading is queued only
   * once the load is done (append), so the removal waits for that load too: queued at once, it
   * would overtake that append, and the file would keep an entry written before it was removed.
   */
  remove(after?: Promise<unknown>): Promise<boolean> {
    const run = (): Promise<boolean> => this.removeNow(after);
    // Not loaded: loaded first all the same, so an append called next (which loads first) is
    // queued behind the removal and counts from what it leaves, not from the file it deletes.
    // Loaded (snap set, even while `loading` is not cleared yet): an append queues at once, so
    // the removal must too.
    return this.snap ? run() : this.load().then(run, run);
  }

  /** With `after`, its place in the queue is kept but nothing is removed unless `after` resolves. */
  private removeNow(after?: Promise<unknown>): Promise<boolean> {
    return this.appender.exclusive(async () => {
      if (after && !(await after.then(() => true, () => false))) return false;
      let removed = true;
      try {
        await this.io.unlink(this.file);
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw ioError('remove', this.rel, err);
        removed = false;
      }
      await removeMeta(this.io, this.metaFile, this.metaRelPath);
      await removeSummary(this.io, ...summaryBeside(this.metaFile, this.metaRelPath));
      this.summarized = 0;
      this.snap = emptySnapshot();
      // Seq starts again at 0 for a new transcript: its mark goes too.
      this.mark.reset();
      await this.mark.save();
      return removed;
    });
  }

  settled(): Promise<void> {
    return this.appender.settled();
  }

  /** Finishes every append and closes the file; writes nothing (summaries are written inside appends). */
  close(): Promise<void> {
    return this.appender.close();
  }

  /**
   * After an append (inside its call, the file's queue held): writes the summary again once
   * SUMMARY_EVERY_BYTES were appended since the one on disk. Only a shortcut: a failure fails no
   * append; it is logged, and the next try waits for as many bytes more.
   */
  private async keepSummary(): Promise<void> {
    const snap = this.snap;
    if (!snap || snap.size - this.summarized < SUMMARY_EVERY_BYTES) return;
    await this.saveSummary(this.appender.head);
  }

  /** Writes the summary of the file as `snap` describes it now, whose first bytes have the head `head`. */
  private async saveSummary(head: string): Promise<void> {
    const { ino, size, count, firstSeq, lastTs, dropped, total } = this.snap as Snapshot;
    try {
      await writeSummary(this.io, ...summaryBeside(this.metaFile, this.metaRelPath), { ino, size, head, count, firstSeq, lastTs, dropped, total });
      this.summarized = size;
    } catch (err) {
      this.summarized = size; // tried again only after as many bytes more
      this.log.error(`writing the summary of ${this.rel} failed; a start scans the file past the last summary instead`, err);
    }
  }

  private written(pending: Pending[], size: number): void {
    const snap = this.snap as Snapshot;
    for (const p of pending) {
      p.seq = snap.firstSeq + snap.count;
      snap.count++;
      addEntry(snap.total, p.entry);
      snap.lastTs = p.entry.ts;
    }
    snap.size = size;
    this.mark.raise(snap.firstSeq + snap.count);
    this.keys?.wrote(pending.flatMap((p) => (p.key ? [p.key] : [])));
    for (const p of pending) this.onAppend(p.seq, p.entry);
  }

  /** Reads the file once (per process): its entries, their usage, the seq of the first. */
  private load(): Promise<Snapshot> {
    if (this.snap) return Promise.resolve(this.snap);
    this.loading ??= scanTranscript({ io: this.io, file: this.file, rel: this.rel, metaFile: this.metaFile, metaRelPath: this.metaRelPath, log: this.log, mark: this.mark })
      .then(({ snap, summarized }) => {
        if (summarized !== undefined) this.summarized = summarized;
        this.snap = snap;
        return snap;
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }

  /**
   * Go's compactTranscript, run inside the file's queue: re-reads the file, keeps the newest
   * entries within 2 MiB (re-encoded, so malformed lines go) and replaces the file. The meta for
   * the new file is written before the rename (see transcript-meta.ts). A failure leaves the file
   * as it was and is retried after the next append, as Go's is. At most MAX_CONCURRENT_COMPACTIONS
   * run at once in the process (compaction-slots.ts).
   */
  private compact(): Promise<void> {
    return compactionSlots.run(() => this.compactNow());
  }

  private async compactNow(): Promise<void> {
    const files = { io: this.io, file: this.file, rel: this.rel, metaFile: this.metaFile, metaRelPath: this.metaRelPath, log: this.log, mark: this.mark, keys: this.keys };
    const head = await replaceWithNewest(files, this.snap as Snapshot);
    if (head === undefined) return;
    this.summarized = 0;
    this.onCompacted?.();
    try {
      await this.io.syncDir(path.dirname(this.file));
    } catch (err) {
      this.log.error(`fsync of the folder of ${this.rel} after compaction failed; the rename may not survive a power loss`, err);
    }
    // The new file's numbers, while the compacting append still runs (the old summary named the old file).
    await this.saveSummary(head);
  }
}
