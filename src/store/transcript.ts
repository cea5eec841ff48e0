// One session's transcript, transcripts/<name>.jsonl: Go-identical lines, appended through the
// file's queue, compacted exactly as Go compacts (but inside that queue, so no append is lost).
// Being the only writer, it keeps what readers ask for in memory: the newest ts, the entry count
// and seq numbers, and usage over every entry ever appended, compacted ones included.
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { AppendFile } from './append-file.js';
import { compactionSlots } from './compaction-slots.js';
import { encodeTranscriptLine, UnsupportedValueError } from './go-json.js';
import { goDecodeUtf8, wellFormed } from './go-text.js';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import type { Durability } from './state-store.js';
import { ioError, StoreError } from './store-error.js';
import type { StoreLog } from './store-log.js';
import type { TranscriptMeta } from './transcript-meta.js';
import type { Generation } from './transcript-meta.js';
import { HEAD_BYTES, headOf } from './file-head.js';
import { findGeneration, readSummary, removeMeta, removeSummary, summaryBeside, writeMeta, writeSummary } from './transcript-meta.js';
import type { Entry } from './transcript-read.js';
import { parseLine, readForward, readNewest, scanEntries, startOfNewest } from './transcript-read.js';
import type { Usage, UsageSum } from './usage.js';
import { addEntry, concatUsage, sumToJson, toUsage, zeroSum } from './usage.js';
import type { WriteAheadLog } from './wal.js';
import type { AppendKeys } from './append-keys.js';
import type { WriterKey } from './writer-sequences.js';

/** Go compacts once an append leaves the file strictly larger than this (transcript.go). */
export const COMPACT_TRIGGER_BYTES = 4 * 1024 * 1024;
/** Half the trigger, so ~2 MiB of fresh appends accumulate before the next compaction (as Go). */
export const COMPACT_KEEP_BYTES = 2 * 1024 * 1024;
/**
 * Bytes appended after which the append that passes them writes the transcript's summary again
 * (transcript-meta.ts): a start scans at most this much of each transcript (its tail past the
 * summary) instead of the whole file, and the cost is one unsynced replace per 64 KiB of appends.
 */
export const SUMMARY_EVERY_BYTES = 64 * 1024;

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

/** What the store knows of the file without reading it: kept exact by every write it makes. */
interface Snapshot {
  /** Inode of the file (0: no file). */
  ino: number;
  /** Bytes of the file up to its last complete, counted line. */
  size: number;
  /** Entries in the file (lines Go's reader would return). */
  count: number;
  /** Seq of the file's first entry. */
  firstSeq: number;
  /** `head` of the file (see transcript-meta.ts): how a meta generation recognises it; undefined when unknown. */
  head: string | undefined;
  /** Usage of entries compaction removed (persisted in the meta). */
  dropped: UsageSum;
  /** Usage of every entry ever appended (dropped + in the file), in append order. */
  total: UsageSum;
  /** ts of the newest entry a full read returns (Go's ReadTranscriptLast). */
  lastTs: string;
  /** Counts replacements of the file (compaction, removal): a read checks it is still reading its version. */
  generation: number;
}

/** Reported for each appended entry, after it is in the file, in file order. */
export type AppendListener = (seq: number, entry: Entry) => void;

interface Pending {
  entry: Entry;
  seq: number;
  /** Its idempotency key (append-keys.ts), if it was sent with one. */
  key?: WriterKey | undefined;
}

/** What compaction keeps of a file: the newest lines within 2 MiB, and what the rest used. */
interface Newest {
  /** Entries in the file. */
  count: number;
  /** The kept entries' lines, in file order. */
  lines: Buffer[];
  /** Usage of everything compacted away: the entries not kept folded onto the earlier sum. */
  removed: UsageSum;
}

const EMPTY = Buffer.alloc(0);

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

export interface Page {
  entries: Entry[];
  firstSeq: number;
}

/** Where a forward page ended: the next page starts there without re-reading, while the file is that version. Opaque. */
export interface ForwardCursor {
  /** The seq the next page starts at. */
  readonly seq: number;
  readonly snap: object;
  readonly generation: number;
  readonly offset: number;
}

/** Entries from a seq on (pageFrom): `end` is the seq the next append gets. */
export interface ForwardPage extends Page {
  end: number;
  /** Where to go on from; absent when nothing was read. */
  cursor?: ForwardCursor;
}

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
      ...(o.keys ? { beforeWrite: (pending: Pending[], ino: number, offsets: number[], bufs: Buffer[]) => this.noteKeys(o.keys as AppendKeys, pending, ino, offsets, bufs) } : {}),
      // Each log record carries the seq after it, so a replay raises the high-water mark past it.
      nextSeq: (pending) => (this.snap ? this.snap.firstSeq + this.snap.count + pending.length : undefined),
      // In sync mode a key is durable in the batch's log record (its line in append-keys.log is synced only by a checkpoint).
      walKeys: (pending) => this.walKeys(pending),
    });
  }

  /** Notes the keyed appends of a batch, with the seq each will get, before their bytes are written. */
  private noteKeys(keys: AppendKeys, pending: Pending[], ino: number, offsets: number[], bufs: Buffer[]): Promise<void> {
    const snap = this.snap as Snapshot;
    const lines = [];
    for (const [i, p] of pending.entries()) {
      const buf = bufs[i] as Buffer;
      if (p.key) lines.push({ key: p.key, answer: { seq: snap.firstSeq + snap.count + i }, place: { f: this.rel, i: ino, o: offsets[i] as number, n: buf.length, c: crc32(buf) } });
    }
    return lines.length > 0 ? keys.note(lines) : Promise.resolve();
  }

  /** The keys of a batch's keyed appends with the seq each will get, or undefined when none has one. */
  private walKeys(pending: Pending[]): [string, number, number][] | undefined {
    const snap = this.snap as Snapshot;
    let keys: [string, number, number][] | undefined;
    for (const [i, p] of pending.entries()) if (p.key) (keys ??= []).push([p.key.id, p.key.seq, snap.firstSeq + snap.count + i]);
    return keys;
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
      const got = await this.pageOf(await this.load(), limit, before);
      if (got) return got;
    }
    // Compactions keep replacing the file under the read: read inside the file's queue, where
    // nothing can replace it (appends wait behind this one read).
    return this.appender.exclusive(async () => {
      const got = await this.pageOf(await this.load(), limit, before);
      if (got) return got;
      throw new StoreError('io', `read ${this.rel}: the file changed under a read that held its queue`, { code: 'EIO' }, 'EIO');
    }, { replaces: false });
  }

  /** The page from the file version `snap` describes, or undefined when it was replaced meanwhile. */
  private async pageOf(snap: Snapshot, limit: number, before: number | undefined): Promise<Page | undefined> {
    const { ino, size, count, firstSeq, generation } = snap;
    const nextSeq = firstSeq + count;
    const upTo = Math.min(before ?? nextSeq, nextSeq);
    if (ino === 0 || upTo <= firstSeq) return { entries: [], firstSeq: Math.max(upTo, firstSeq) };
    const got = await this.readVersion(ino, size, nextSeq - upTo, limit > 0 ? limit : upTo - firstSeq,
      () => this.snap === snap && snap.generation === generation);
    return got && { entries: got, firstSeq: upTo - got.length };
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
      const got = await this.forwardOf(await this.load(), from, limit, maxBytes, cursor);
      if (got) return got;
    }
    return this.appender.exclusive(async () => {
      const got = await this.forwardOf(await this.load(), from, limit, maxBytes, cursor);
      if (got) return got;
      throw new StoreError('io', `read ${this.rel}: the file changed under a read that held its queue`, { code: 'EIO' }, 'EIO');
    }, { replaces: false });
  }

  /** The forward page from the file version `snap` describes, or undefined when it was replaced meanwhile. */
  private async forwardOf(snap: Snapshot, from: number, limit: number, maxBytes: number, cursor: ForwardCursor | undefined): Promise<ForwardPage | undefined> {
    const { ino, size, count, firstSeq, generation } = snap;
    const end = firstSeq + count;
    const start = Math.max(from, firstSeq);
    if (ino === 0 || start >= end) return { entries: [], firstSeq: start, end };
    const stillCurrent = (): boolean => this.snap === snap && snap.generation === generation;
    try {
      let offset = 0;
      let skip = 0;
      if (cursor && cursor.snap === snap && cursor.generation === generation && cursor.seq === start && cursor.offset <= size) offset = cursor.offset;
      else if (end - start <= start - firstSeq) offset = await startOfNewest(this.io, this.file, { ino, size, stillCurrent, limit: end - start });
      else skip = start - firstSeq;
      const got = await readForward(this.io, this.file, { ino, size, stillCurrent, offset, skip, limit: Math.min(limit, end - start), maxBytes });
      // A file that holds fewer entries than its count says ends the read here, rather than never.
      if (got.entries.length === 0) return { entries: [], firstSeq: start, end: start };
      return { entries: got.entries, firstSeq: start, end, cursor: { seq: start + got.entries.length, snap, generation, offset: got.next } };
    } catch (err) {
      if (isErrno(err, 'ESTALE')) return undefined;
      throw ioError('read', this.rel, err);
    }
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
    this.loading ??= this.scan()
      .then((snap) => {
        this.snap = snap;
        return snap;
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }

  private async scan(): Promise<Snapshot> {
    let fh: FileHandle;
    try {
      fh = await this.io.open(this.file, 'r');
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return emptySnapshot(); // no file: no entries (as Go)
      throw ioError('read', this.rel, err);
    }
    try {
      const ino = await this.io.inode(fh);
      const size = await this.io.size(fh);
      const prefix = Buffer.alloc(Math.min(size, HEAD_BYTES));
      await this.io.read(fh, prefix, 0);
      // What this file's first bytes hold, as an append wrote it down: believed only if it names
      // this very file (inode, first bytes) and ends within it; the rest is scanned.
      const found = await readSummary(this.io, ...summaryBeside(this.metaFile, this.metaRelPath), { ino, size, prefix },
        (why) => this.log.error(why));
      // It ends where a line ends (as every append leaves the file), or it is about another file.
      const known = found && (found.size === 0 || await this.endsLine(fh, found.size)) ? found : undefined;
      if (known) {
        const tail = { ...known.total };
        let tailEntries = 0;
        await scanEntries(this.io, fh, size, (e) => {
          addEntry(tail, e); // on from the summary's sum, entry by entry, as the appends added them
          tailEntries++;
        }, known.size);
        const count = known.count + tailEntries;
        // The seq numbering still comes from the meta, as for a scan (its copies checked and repaired,
        // a loss reported); a summary that disagrees with it is not used.
        const { firstSeq, dropped } = await this.numbering(ino, prefix, count);
        if (firstSeq === known.firstSeq && sameSum(dropped, known.dropped)) {
          this.mark.raise(firstSeq + count);
          this.summarized = known.size;
          const lastTs = tailEntries > 0 ? tail.lastTs : known.lastTs;
          return { ino, size, head: headOf(prefix), count, firstSeq, dropped, total: tail, lastTs, generation: 0 };
        }
      }
      // Streamed: only the numbers are kept, and the event loop runs between chunks.
      // A torn tail counts as Go's reader counts it; its repair before the next append keeps that.
      const inFile = zeroSum();
      const costs: number[] = [];
      await scanEntries(this.io, fh, size, (e) => {
        addEntry(inFile, e);
        costs.push(e.cost ?? 0);
      });
      const { firstSeq, dropped } = await this.numbering(ino, prefix, inFile.entries);
      this.mark.raise(firstSeq + inFile.entries);
      const total = concatUsage(dropped, inFile);
      // The cost goes on from the compacted part's sum entry by entry, as the appends added it:
      // float addition regrouped (dropped + the file's own sum) could differ in the last bits.
      if (dropped.entries > 0) total.cost = costs.reduce((sum, c) => sum + c, dropped.cost);
      return {
        ino,
        size,
        head: headOf(prefix),
        count: inFile.entries,
        firstSeq,
        dropped,
        total,
        lastTs: inFile.entries > 0 ? inFile.lastTs : '',
        generation: 0,
      };
    } catch (err) {
      throw err instanceof StoreError ? err : ioError('read', this.rel, err);
    } finally {
      await fh.close();
    }
  }

  /** Whether the byte before offset `at` is a newline. */
  private async endsLine(fh: FileHandle, at: number): Promise<boolean> {
    const b = Buffer.alloc(1);
    return (await this.io.read(fh, b, at - 1)) === 1 && b[0] === 0x0a;
  }

  /**
   * The seq of the file's first entry and the usage compaction removed before it: from the first
   * copy of the meta that describes this very file (a damaged or missing copy is rebuilt from it).
   * When no copy does, the durable high-water mark numbers the file, so no seq already answered
   * is answered again, and one error names the file and what was lost.
   */
  private async numbering(ino: number, prefix: Buffer, count: number): Promise<{ firstSeq: number; dropped: UsageSum }> {
    const found = await findGeneration(this.io, this.metaFile, this.metaRelPath, ino, prefix);
    if (found.gen) {
      const bad = [...found.damaged, ...found.missing];
      if (bad.length) {
        try {
          await this.rebuildMeta({ ...found.gen, head: found.gen.head ?? headOf(prefix) });
          this.log.warn(`${bad.join(' and ')} ${bad.length === 1 ? 'was' : 'were'} missing or damaged; rebuilt from the other copy`);
        } catch (err) {
          // A repair that fails (a folder where the copy belongs) must not fail the read: one copy holds.
          this.log.error(`${bad.join(' and ')} ${bad.length === 1 ? 'is' : 'are'} missing or damaged and could not be rebuilt; the other copy is used`, err);
        }
      }
      return { firstSeq: found.gen.firstSeq, dropped: found.gen.dropped };
    }
    const mark = this.mark.get();
    if (mark <= count && found.damaged.length === 0) return { firstSeq: 0, dropped: zeroSum() }; // never compacted
    const firstSeq = Math.max(0, mark - count);
    this.log.error(
      `${this.rel}: every copy of its side file (${this.metaRelPath} and its .copy) is missing, damaged or about another file; ` +
      `seq numbers continue from the durable high-water mark ${mark} (the file's entries numbered from ${firstSeq}), ` +
      `and the usage of ${firstSeq} compacted entries is lost`,
    );
    // Written down at once, so the next start numbers the file the same way, and says nothing.
    await this.rebuildMeta({ ino, head: headOf(prefix), firstSeq, dropped: zeroSum() });
    return { firstSeq, dropped: zeroSum() };
  }

  private rebuildMeta(gen: Generation): Promise<void> {
    return writeMeta(this.io, this.metaFile, this.metaRelPath, gen);
  }

  /**
   * `limit` entries ending `skip` entries before the end of the file version `ino`/`size`, or
   * undefined when the file on disk is no longer that version (compacted or removed meanwhile).
   */
  private async readVersion(ino: number, size: number, skip: number, limit: number, stillCurrent: () => boolean): Promise<Entry[] | undefined> {
    try {
      return await readNewest(this.io, this.file, { ino, size, skip, limit, stillCurrent });
    } catch (err) {
      if (isErrno(err, 'ESTALE')) return undefined;
      throw ioError('read', this.rel, err);
    }
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
    const snap = this.snap as Snapshot;
    const tmp = `${this.file}.compact`;
    let ino = 0;
    let newest: Newest;
    let next: TranscriptMeta;
    try {
      newest = await this.newestOfFile(snap.dropped);
      if (newest.count === 0) return;
      // A crash's leftover is swept at start; whatever is at the name now is removed, not written
      // through (O_EXCL: a link planted there is never followed).
      await this.io.unlink(tmp).catch((err: unknown) => {
        if (!isErrno(err, 'ENOENT')) throw err;
      });
      const fh = await this.io.open(tmp, 'wx', 0o600);
      try {
        await this.io.write(fh, Buffer.concat(newest.lines));
        // On disk before the rename is: else a power loss after it can leave the transcript short or empty.
        await this.io.datasync(fh);
        ino = await this.io.inode(fh);
      } finally {
        await fh.close();
      }
      next = {
        ino,
        head: headOf(prefixOf(newest.lines)),
        firstSeq: snap.firstSeq + newest.count - newest.lines.length,
        dropped: newest.removed,
        prev: { ino: snap.ino, ...(snap.head === undefined ? {} : { head: snap.head }), firstSeq: snap.firstSeq, dropped: snap.dropped },
      };
      await writeMeta(this.io, this.metaFile, this.metaRelPath, next);
      this.mark.raise(next.firstSeq + newest.lines.length);
      await this.mark.save();
      // The keys' lines name places in the old file: written again without them first (append-keys.ts).
      await this.keys?.carry(this.rel, snap.ino);
      await this.io.rename(tmp, this.file);
    } catch (err) {
      await this.removeTemp(tmp);
      this.log.error(`compaction of ${this.rel} failed; the file is left as it was and compaction is retried after the next append`, err);
      return;
    }
    // The rename is the commit point: from here the new file is the transcript.
    this.summarized = 0;
    Object.assign(snap, {
      ino, head: next.head, size: newest.lines.reduce((n, l) => n + l.length, 0), count: newest.lines.length, firstSeq: next.firstSeq,
      dropped: next.dropped, generation: snap.generation + 1,
    });
    this.onCompacted?.();
    try {
      await this.io.syncDir(path.dirname(this.file));
    } catch (err) {
      this.log.error(`fsync of the folder of ${this.rel} after compaction failed; the rename may not survive a power loss`, err);
    }
    // The new file's numbers, while the compacting append still runs (the old summary named the old file).
    await this.saveSummary(next.head as string);
  }

  /** Removes a failed compaction's temp file; absent is fine (it failed before creating it). */
  private async removeTemp(tmp: string): Promise<void> {
    try {
      await this.io.unlink(tmp);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) this.log.error(`removing ${this.rel}.compact after a failed compaction failed; it is swept at the next start`, err);
    }
  }

  /**
   * Go's compaction choice over the whole file, streamed (scanEntries): the newest entries whose
   * re-encoded lines fit in COMPACT_KEEP_BYTES (at least one), as newestWithin picks them, and
   * the usage of the others. A window slides over the file, so only ~2 MiB of lines is held.
   */
  private async newestOfFile(before: UsageSum): Promise<Newest> {
    const fh = await this.io.open(this.file, 'r');
    const window: Buffer[] = [];
    let head = 0; // window[head..] is the kept suffix so far
    let bytes = 0;
    let count = 0;
    const removed = { ...before };
    const entries: Entry[] = [];
    try {
      await scanEntries(this.io, fh, await this.io.size(fh), (e) => {
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
}

const sameSum = (a: UsageSum, b: UsageSum): boolean => JSON.stringify(sumToJson(a)) === JSON.stringify(sumToJson(b));

function emptySnapshot(): Snapshot {
  return { ino: 0, size: 0, head: undefined, count: 0, firstSeq: 0, dropped: zeroSum(), total: zeroSum(), lastTs: '', generation: 0 };
}

/** The first HEAD_BYTES bytes of the lines a compaction writes. */
function prefixOf(lines: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [];
  let n = 0;
  for (const l of lines) {
    if (n >= HEAD_BYTES) break;
    parts.push(l);
    n += l.length;
  }
  return Buffer.concat(parts).subarray(0, HEAD_BYTES);
}
