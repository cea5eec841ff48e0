// The write-ahead log behind `--durability sync`: every append to a transcript or a journal is
// also recorded here, and the record's fdatasync is what makes the append durable. One log
// shared by every file means one fdatasync per batch, whatever the number of sessions (per-file
// fdatasyncs are bound by how many the disk does concurrently). The Go-format files themselves
// are written without a sync; after a crash, `replayWal` puts back any record they lack.
//
// A record: a sealed line (sealed-line.ts) of {f: file relative to the state dir, i: its inode,
// h: its head before the append (file-head.ts: the checksum of its first bytes, on disk already),
// o: its size before the append, d: the bytes appended}. Replay is idempotent: a record whose
// bytes are already at `o` is skipped; a file gone, or another file at its name (another inode,
// or the same inode number reused by a new file whose first bytes differ), is left alone. A file's
// first append (at offset 0, where there are no first bytes to name it by) is fdatasynced in the
// file itself instead; its record, when it has a seq to carry, has no bytes (`d: ""`): replay only
// raises the mark. Records of earlier builds at offset 0 carry their bytes and name the file by
// its inode alone.
// The log is emptied (a checkpoint: every file written since is fdatasync'ed first) when it grows
// past a bound and before a file is replaced or removed, so no record can outlive its file. Every
// checkpoint runs inside a call that waits for it (the append whose record crossed the bound, a
// compaction, a removal): nothing is written once the calls have returned, and a close leaves the
// records for the next start's replay.
import { constants as fsConstants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { CommitQueue } from './commit-queue.js';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import { headFits, headLength, HEAD_PATTERN } from './file-head.js';
import { isPathComponent } from './paths.js';
import { NewerFormatError, sealLine, unsealLine } from './sealed-line.js';
import { ioError } from './store-error.js';
import type { StoreLog } from './store-log.js';

/** The log of `state.json`; another state file's is in its own side folder (paths.ts, sideOf). */
export const WAL_REL = '.herrscher-state/wal.log';
/** The log in the side folder `side` (relative to the state dir). */
export const walRelIn = (side: string): string => `${side}/wal.log`;
/** Past this size the log is checkpointed: replay after a crash stays short. */
const CHECKPOINT_BYTES = 16 * 1024 * 1024;

export interface WalRecord {
  /** The file, relative to the state dir. */
  readonly f: string;
  readonly i: number;
  /**
   * The head of the file (file-head.ts) over its first min(o, HEAD_BYTES) bytes, already durable
   * when the record is written: with the inode, what names the file. Absent in records of 0.1.0
   * and earlier, which name it by inode alone.
   */
  readonly h?: string;
  readonly o: number;
  readonly d: string;
  /** For a transcript: the seq after this record's entries (the replay raises the high-water mark to it). */
  readonly s?: number;
}

interface Pending {
  readonly bytes: Buffer;
  readonly file: string;
}

/**
 * Files a checkpoint syncs at once. Each sync opens its file: a checkpoint after writes to a few
 * hundred sessions that opened them all at once failed with EMFILE under `ulimit -n 256` (and
 * 1024 with more sessions), and a failed checkpoint is retried the same way, so the log never
 * emptied. A few at a time fit in the descriptors the store keeps in reserve (name-cache.ts).
 */
export const SYNCS_AT_ONCE = 16;

const encodeRecord = (r: WalRecord): Buffer => Buffer.from(sealLine(JSON.stringify(r)));

/** A log's records, and the complete lines that are not records (damaged: skipped, never guessed at). */
export interface WalScan {
  records: WalRecord[];
  /** 1-based line numbers of the damaged lines, and why each is. */
  damaged: { line: number; why: string }[];
  /** The first line of a newer format than this build reads (the scan stops there; replay refuses to go on). */
  newer?: { line: number; version: number };
}

/**
 * Every record of a log's bytes (sealed lines: sealed-line.ts). A complete line whose checksum
 * fails or whose record is not of the shape this server writes is damaged: it is skipped and
 * reported, and the records after it are still read (one bad sector must not drop every
 * acknowledged append behind it). Bytes after the last newline are a torn write of a batch never
 * acknowledged: ignored. A line of a newer format ends the scan (`newer`).
 */
export function scanWal(buf: Buffer): WalScan {
  const out: WalScan = { records: [], damaged: [] };
  let start = 0;
  let line = 0;
  for (let end = buf.indexOf(0x0a, start); end >= 0; end = buf.indexOf(0x0a, start)) {
    const text = buf.toString('utf8', start, end);
    start = end + 1;
    line++;
    const got = unsealLine(text);
    if ('newer' in got) {
      out.newer = { line, version: got.newer };
      return out;
    }
    if ('damaged' in got) {
      out.damaged.push({ line, why: got.damaged });
      continue;
    }
    const why = recordProblem(got.value);
    if (why) out.damaged.push({ line, why });
    else out.records.push(got.value as WalRecord);
  }
  return out;
}

const isCount = (n: unknown): boolean => Number.isSafeInteger(n) && (n as number) >= 0;

/** Why `v` is not a record this server writes (undefined when it is one): a checksum can be forged. */
function recordProblem(v: unknown): string | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'not an object';
  const r = v as Record<string, unknown>;
  if (typeof r.f !== 'string') return 'f is not a string';
  if (!isCount(r.i)) return 'i is not an inode number';
  if (r.h !== undefined && (typeof r.h !== 'string' || !HEAD_PATTERN.test(r.h))) return 'h is not a head (<n>:<crc32 hex>)';
  if (!isCount(r.o)) return 'o is not an offset (a whole number ≥ 0)';
  if (typeof r.d !== 'string') return 'd is not a string';
  if (r.s !== undefined && !isCount(r.s)) return 's is not a seq (a whole number ≥ 0)';
  return undefined;
}

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
   */
  async record(r: WalRecord): Promise<void> {
    const bytes = encodeRecord(r);
    if (this.poisoned) await this.checkpoint().catch(() => undefined); // failure logged by checkpoint; the push below then refuses
    await this.queue.push({ bytes, file: r.f });
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

  private async commit(batch: Pending[]): Promise<void> {
    if (this.poisoned) throw this.poisoned;
    const before = this.size;
    try {
      // Stryker disable next-line ConditionalExpression: a concat of one buffer holds the same bytes (the single case only saves the copy)
      await this.io.writeSynced(this.fh, batch.length === 1 ? (batch[0] as Pending).bytes : Buffer.concat(batch.map((p) => p.bytes)));
      this.size = before + batch.reduce((n, p) => n + p.bytes.length, 0);
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
    for (const p of batch) this.dirty.add(p.file);
  }
}

/** Where a replay stands with one file: its handle (null: gone or replaced), and how far it moved. */
interface ReplayFile {
  readonly fh: FileHandle | null;
  /** Whether the file at the name has the records' inode number but is another file (its head differs). */
  readonly reused: boolean;
  /** Records left alone for that reason. */
  foreign: number;
  /** Where this file's records now land relative to their offsets (0 until one was re-appended). */
  delta: number;
  restored: number;
  reappended: number;
}

// `s`: a name may hold a line terminator (any one path component is a name), which `.` alone skips.
const STORE_FILE = /^(transcripts\/(.+)\.jsonl|participants\/(.+)\.log)$/s;

/** Whether a record names a file the store writes: `transcripts/<name>.jsonl` or `participants/<name>.log`, any name the store accepts. */
function isStoreFile(rel: string): boolean {
  const m = STORE_FILE.exec(rel);
  const name = m?.[2] ?? m?.[3];
  return name !== undefined && isPathComponent(name);
}

/**
 * Puts back what a crash kept from the Go-format files, then syncs every touched file and empties
 * the log. Per record: bytes already at its offset are skipped (a replay is idempotent); a torn
 * copy of them (a prefix) is cut and rewritten; a file removed or replaced since (another inode,
 * or the same inode number with other first bytes: a new file that reused it) is left alone.
 * Bytes this server did not write (the Go daemon appended first after a machine crash) are never
 * overwritten: the record's entry is appended after the file's end instead, and so are the
 * file's later records, and one `error` names the file and how many were re-appended. Returns
 * how many records were written back.
 */
export async function replayWal(
  io: Io,
  dir: string,
  log: StoreLog,
  /** Told, before the log is emptied, the seq after the last record of each transcript (by relative path). */
  keepSeqs: (next: Map<string, number>) => Promise<void> = async () => undefined,
  opts: {
    /** The log, relative to dir (default: state.json's). */
    rel?: string;
    /** Leave the log's records in it (another state file's log, replayed for its records only once). */
    keepLog?: boolean;
  } = {},
): Promise<number> {
  const rel = opts.rel ?? WAL_REL;
  const file = path.join(dir, rel);
  let buf: Buffer;
  try {
    buf = await io.readFile(file);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return 0; // never ran in sync mode: nothing to replay
    throw ioError('read', rel, err);
  }
  const files = new Map<string, ReplayFile>();
  const seqs = new Map<string, number>();
  const { records, damaged, newer } = scanWal(buf);
  // Before anything is touched: a build must not replay what it cannot read, nor empty it.
  if (newer) throw new NewerFormatError(rel, newer.version, `line ${newer.line}`);
  if (damaged.length) {
    const lines = damaged.slice(0, 10).map((d) => `line ${d.line} (${d.why})`).join(', ');
    log.error(`wal: ${damaged.length} damaged record(s) in ${rel} skipped: ${lines}${damaged.length > 10 ? ', …' : ''}; ` +
      `the ${records.length} valid record(s) around them are replayed; an append whose record was damaged is put back only if its file kept it`);
  }
  let failure: unknown;
  try {
    for (const r of records) {
      if (typeof r.s === 'number' && r.s > (seqs.get(r.f) ?? 0)) seqs.set(r.f, r.s);
      if (!isStoreFile(r.f)) {
        log.error(`wal: record for ${JSON.stringify(r.f)} ignored: not a file this store writes`);
        continue;
      }
      // A seq-only record (a file's first append, durable in the file itself): nothing to put
      // back, and no bytes to know the file by; the file's next record names it.
      if (r.d === '') continue;
      let f = files.get(r.f);
      if (!f) {
        const fh = await openIfSame(io, path.join(dir, r.f), r);
        f = { fh: fh === 'reused' ? null : fh, reused: fh === 'reused', foreign: 0, delta: 0, restored: 0, reappended: 0 };
        files.set(r.f, f);
      }
      if (f.fh) await replayRecord(io, f, r);
      else if (f.reused) f.foreign++;
    }
    for (const f of files.values()) if (f.fh) await io.datasync(f.fh);
  } catch (err) {
    failure = ioError('replay', rel, err);
  }
  for (const f of files.values()) {
    try {
      await f.fh?.close();
    } catch (err) {
      failure ??= ioError('replay', rel, err);
    }
  }
  if (failure) throw failure;
  await keepSeqs(seqs);
  if (!opts.keepLog) {
    const wal = await io.open(file, 'r+');
    try {
      await io.truncate(wal, 0);
      await io.datasync(wal);
    } finally {
      await wal.close();
    }
  }
  let restored = 0;
  for (const [fileRel, f] of files) {
    if (f.foreign) {
      log.warn(`wal: ${f.foreign} record(s) for ${fileRel} left alone: the file at that name is another one than they were written to ` +
        '(its inode number was reused, its first bytes differ); it was replaced after the crash, and its bytes are kept as they are');
    }
    restored += f.restored + f.reappended;
    if (f.reappended) {
      log.error(`wal: ${fileRel} holds bytes this server did not write where its records belong (another writer appended after a crash); kept them and re-appended ${f.reappended} entr${f.reappended === 1 ? 'y' : 'ies'} after the file's end`);
    }
  }
  if (restored) log.warn(`wal: ${restored} append(s) the files lacked after a crash were put back`);
  return restored;
}

/**
 * The file opened for appending when it is still the one a record names: the same inode and,
 * when the record has one, the same head (an inode number is reused by the next new file). null
 * when gone or replaced by another inode; 'reused' when the inode number is the record's but the
 * file is another one.
 */
async function openIfSame(io: Io, file: string, r: WalRecord): Promise<FileHandle | null | 'reused'> {
  let fh: FileHandle;
  try {
    // O_APPEND: every write lands at the end (after a truncate to a record's offset: at that offset).
    fh = await io.open(file, fsConstants.O_RDWR | fsConstants.O_APPEND);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return null; // removed since the record: nothing to put back
    throw err;
  }
  let sameInode: boolean;
  let same: boolean;
  try {
    sameInode = (await io.inode(fh)) === r.i;
    same = sameInode && (r.h === undefined || (await hasHead(io, fh, r.h)));
  } catch (err) {
    await fh.close();
    throw err;
  }
  if (same) return fh;
  await fh.close();
  // Replaced since the record (compacted, or removed and recreated): the record is not about it.
  return sameInode ? 'reused' : null;
}

/** Whether the file's first bytes are the ones `head` describes (they were durable when the record was written). */
async function hasHead(io: Io, fh: FileHandle, head: string): Promise<boolean> {
  const prefix = Buffer.alloc(headLength(head) ?? 0);
  const n = await io.read(fh, prefix, 0);
  return headFits(head, prefix.subarray(0, n));
}

async function replayRecord(io: Io, f: ReplayFile, r: WalRecord): Promise<void> {
  const fh = f.fh as FileHandle;
  const data = Buffer.from(r.d);
  const at = r.o + f.delta;
  const size = await io.size(fh);
  if (size >= at) {
    const there = Buffer.alloc(Math.min(data.length, size - at));
    await io.read(fh, there, at);
    if (there.equals(data)) return; // already there
    // (Shorter than the record: the same length would have been equal above.)
    if (data.subarray(0, there.length).equals(there)) {
      // A torn copy of this very record at the end of the file (or none yet): complete it.
      await io.truncate(fh, at);
      await io.write(fh, data);
      if (f.delta === 0) f.restored++;
      else f.reappended += countLines(data); // follows records already moved past foreign bytes
      return;
    }
  }
  // Other bytes where the record belongs, or the file ends before its offset: keep what is there,
  // put the entry after it (on a line of its own), and move this file's later records with it.
  let end = size;
  if (end > 0) {
    const last = Buffer.alloc(1);
    await io.read(fh, last, end - 1);
    if (last[0] !== 0x0a) {
      await io.write(fh, Buffer.from('\n'));
      end++;
    }
  }
  await io.write(fh, data);
  f.delta = end - r.o;
  f.reappended += countLines(data);
}

function countLines(buf: Buffer): number {
  let n = 0;
  for (let i = buf.indexOf(0x0a); i >= 0; i = buf.indexOf(0x0a, i + 1)) n++;
  return n;
}
