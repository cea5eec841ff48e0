// Replay of the write-ahead log at start, under the lock and before anything reads a transcript:
// what a crash kept from the Go-format files is put back from the log's records (wal-record.ts).
// Replay is idempotent: a record whose bytes are already at `o` is skipped; a file gone, or
// another file at its name (another inode, or the same inode number reused by a new file whose
// durable first bytes differ from the record's head), is left alone. A record without bytes (a
// file's first append, durable in the file itself) names the file by the append's own bytes: it
// puts nothing back, and hands back its seq and (when the file is still that one) its keys.
// Records of earlier builds at offset 0 carry their bytes and name the file by its inode alone.
import { constants as fsConstants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import { headFits, headLength } from './file-head.js';
import type { Io } from './io.js';
import { isPathComponent } from './paths.js';
import { NewerFormatError } from './sealed-line.js';
import { ioError } from './store-error.js';
import type { StoreLog } from './store-log.js';
import type { ReplayedKey, WalRecord } from './wal-record.js';
import { scanWal, WAL_REL } from './wal-record.js';

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
  /**
   * Told, before the log is emptied, the seq after the last record of each transcript (by
   * relative path), and the keys of the records whose file holds their bytes now.
   */
  keepSeqs: (next: Map<string, number>, keys: ReplayedKey[]) => Promise<void> = async () => undefined,
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
  const keys: ReplayedKey[] = [];
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
      let f = files.get(r.f);
      if (!f) {
        const fh = await openIfSame(io, path.join(dir, r.f), r);
        f = { fh: fh === 'reused' ? null : fh, reused: fh === 'reused', foreign: 0, delta: 0, restored: 0, reappended: 0 };
        files.set(r.f, f);
      }
      if (f.fh) {
        await replayRecord(io, f, r);
        if (r.k) keys.push(...r.k);
      } else if (f.reused) f.foreign++;
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
  await keepSeqs(seqs, keys);
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
