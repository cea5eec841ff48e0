// The few file-system calls the store makes, as one seam: tests swap a call to inject ENOSPC or
// EIO and check that nothing changed, the way sonic-boom's tests swap node:fs.
//
// No call follows a symbolic link at the name it is given: every open adds O_NOFOLLOW (a link
// there fails with ELOOP), whole-file replaces write a temp file checked to be a fresh one of ours
// and rename it over the name (which replaces a link, never writes through it). The folders
// between the state dir and a file are checked by `confine` (state-dir.ts wraps the store's Io
// with it).
import { constants as C, lstatSync } from 'node:fs';
import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';
import { errnoOf } from '../common/errno.js';
import type { GroupWrite } from './writer-thread-jobs.js';
import { loggedOutcome } from './logged-outcome.js';
import { BATCH_JOBS, BATCHED_WRITE_MAX, LineNotWritten } from './writer-thread-jobs.js';
import { WriterThread } from './writer-thread.js';
import type { FileStamp } from './writer-worker.js';

export type { FileStamp } from './writer-worker.js';
export { LineNotWritten } from './writer-thread-jobs.js';

/** A whole file's bytes: text, bytes, or bytes in pieces (copied once, in order, by the writer thread). */
export type FileBytes = string | Uint8Array | readonly Uint8Array[];

/** A line to append to an open file before a replace (Io.appendThenReplace); fdatasync'ed after it when `sync`. */
export interface LineToAppend {
  readonly fh: fs.FileHandle;
  readonly buf: Buffer;
  readonly sync: boolean;
}

/** A write-ahead record and the line it records (Io.writeLogged); a record without a line records bytes already written. */
export interface LoggedLine {
  readonly line?: { readonly fh: fs.FileHandle; readonly buf: Buffer } | undefined;
  readonly record: Buffer;
}

export interface Io {
  /**
   * Whole-file replace: temp file, write, fsync (when `sync`), rename. Resolves with the stamp
   * of the file written when it knows it (a test's replacement may not: the caller then stats
   * the file). `data` is the caller's again once the call settles (state.json's rows are built
   * in buffers used in turn: row-cache.ts).
   */
  writeAtomic(file: string, data: FileBytes, opts: { mode: number; sync: boolean }): Promise<FileStamp | void>;
  /**
   * Appends `line` (write, then fdatasync when `line.sync`), then, only once it is, replaces
   * `file` as writeAtomic does: a commit's idempotency keys and its state.json (state-keys.ts), in
   * one hand-off to the writer thread instead of two. A line that fails rejects with
   * LineNotWritten (its `cause` the error) and replaces nothing.
   */
  appendThenReplace(line: LineToAppend, file: string, data: FileBytes, opts: { mode: number; sync: boolean }): Promise<FileStamp | void>;
  /** fsync of a directory, so a rename or a new file survives power loss. */
  syncDir(dir: string): Promise<void>;
  open(file: string, flags: string | number, mode?: number): Promise<fs.FileHandle>;
  write(fh: fs.FileHandle, buf: Buffer): Promise<number>;
  datasync(fh: fs.FileHandle): Promise<void>;
  /**
   * `write` then `datasync`, resolved once both are done; rejected without a sync when the
   * write fails. Its own call so that a small durable write is one hand-off to the writer thread
   * (its write and fdatasync there) instead of that plus a thread-pool hop for the sync.
   */
  writeSynced(fh: fs.FileHandle, buf: Buffer): Promise<number>;
  /**
   * The write-ahead log's batch with the lines its records are about: each entry's line appended
   * to its file, then to `log` the records of the entries whose line was written (in order), then
   * `log` fdatasync'ed. A lone durable append is one hand-off to the writer thread when it is
   * idle (its line, its record and the sync) instead of two. Resolves with, per entry, its line's
   * failure (a LineNotWritten, whose record was left out) or undefined; rejects when a record's
   * write or the sync failed (what the log then holds past its old size is unknown: the caller
   * cuts it back). With every line failed, the log is as it was (whether its sync was tried or not).
   */
  writeLogged(log: fs.FileHandle, entries: readonly LoggedLine[]): Promise<(LineNotWritten | undefined)[]>;
  truncate(fh: fs.FileHandle, len: number): Promise<void>;
  readFile(file: string): Promise<Buffer>;
  read(fh: fs.FileHandle, buf: Buffer, position: number): Promise<number>;
  size(fh: fs.FileHandle): Promise<number>;
  inode(fh: fs.FileHandle): Promise<number>;
  rename(from: string, to: string): Promise<void>;
  /**
   * Makes one folder (its parent must exist: a removed state dir fails with ENOENT, never made
   * again); one that exists already is fine.
   */
  mkdir(dir: string, mode: number): Promise<void>;
  unlink(file: string): Promise<void>;
  readdir(dir: string): Promise<string[]>;
  /** The entry itself, a link not followed (folder checks). */
  lstat(file: string): Promise<Stats>;
  /**
   * The same on the main thread, undefined when nothing is at the name: the look at state.json
   * before each read and commit, ~2 µs, where a thread-pool hop cost a wake-up of two threads.
   */
  lstatNow(file: string): Stats | undefined;
  realpath(file: string): Promise<string>;
}

const STRING_FLAGS: Record<string, number> = {
  r: C.O_RDONLY,
  'r+': C.O_RDWR,
  w: C.O_WRONLY | C.O_CREAT | C.O_TRUNC,
  wx: C.O_WRONLY | C.O_CREAT | C.O_TRUNC | C.O_EXCL,
  'w+': C.O_RDWR | C.O_CREAT | C.O_TRUNC,
  a: C.O_WRONLY | C.O_APPEND | C.O_CREAT,
  ax: C.O_WRONLY | C.O_APPEND | C.O_CREAT | C.O_EXCL,
  'a+': C.O_RDWR | C.O_APPEND | C.O_CREAT,
  'ax+': C.O_RDWR | C.O_APPEND | C.O_CREAT | C.O_EXCL,
};

/** `flags` (fs's letters or numbers) with O_NOFOLLOW added. */
export function noFollow(flags: string | number): number {
  const n = typeof flags === 'number' ? flags : STRING_FLAGS[flags];
  if (n === undefined) throw new TypeError(`unknown open flags ${JSON.stringify(flags)}`);
  return n | C.O_NOFOLLOW;
}

/** An errno-shaped error whose message ioError turns into a reason (no path after a comma). */
export function linkRefused(): NodeJS.ErrnoException {
  return Object.assign(new Error('ELOOP: a symbolic link is in the way (the store follows none inside the state dir)'), {
    code: 'ELOOP', syscall: 'open',
  });
}

/** The error for a name that holds a folder, a FIFO, a socket or a device where a file belongs. */
export function notRegularFile(st: Stats): NodeJS.ErrnoException {
  const what = st.isDirectory() ? 'a directory' : st.isFIFO() ? 'a FIFO' : st.isSocket() ? 'a socket' : 'a device or other special file';
  // A folder keeps the errno reading one gives (EISDIR); the rest have none of their own.
  const code = st.isDirectory() ? 'EISDIR' : 'EFTYPE';
  return Object.assign(new Error(`${code}: ${what} is where a regular file belongs`), { code, syscall: 'open' });
}

/**
 * Opens `file` without following a link at its name. O_NOFOLLOW's own ELOOP reads "too many
 * symbolic links encountered", which misleads: it is replaced by one that says what happened.
 */
export async function openNoFollow(file: string, flags: string | number, mode?: number): Promise<fs.FileHandle> {
  try {
    return await fs.open(file, noFollow(flags), mode);
  } catch (err) {
    if (errnoOf(err) === 'ELOOP') throw linkRefused();
    throw err;
  }
}

/** The one writer thread of the process: every store's small writes share its hand-offs, and each whole-file replace is one. */
const writer = new WriterThread();

export const nodeIo: Io = {
  // The whole replace in one hand-off to the writer thread (the steps are writer-worker.ts's replaceFile).
  writeAtomic: (file, data, opts) => writer.replace(file, data, opts),
  appendThenReplace: (line, file, data, opts) => writer.replace(file, data, opts, { fd: line.fh.fd, buf: line.buf, datasync: line.sync }),
  async syncDir(dir) {
    const fh = await openNoFollow(dir, C.O_RDONLY | C.O_DIRECTORY);
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  },
  open: openNoFollow,
  // Never write(2) on the main thread: a disk that stalls (full queue, frozen NFS, a pipe nobody
  // reads) must stall the writers waiting for it, not every connection. Small writes
  // share one hand-off per turn of the event loop (writer-thread.ts); a big one goes alone through
  // the thread pool.
  // Stryker disable next-line ConditionalExpression,EqualityOperator: either road writes every byte off the main thread, and a file's appends wait for each other; only the cost differs
  write: (fh, buf) => (buf.length <= BATCHED_WRITE_MAX ? writer.write(fh.fd, buf) : writeAll(fh, buf)),
  datasync: (fh) => fh.datasync(),
  // One hand-off (write and fdatasync on the writer thread) when the writer thread has nothing
  // else to do. When it has, the sync goes through the thread pool as its own hop: on the writer
  // thread it would hold every write posted during it (other transcripts' appends) for the
  // length of an fdatasync, where the pool lets them go meanwhile.
  async writeSynced(fh, buf) {
    if (buf.length > BATCHED_WRITE_MAX) {
      const n = await writeAll(fh, buf);
      await fh.datasync();
      return n;
    }
    if (writer.idle) return writer.write(fh.fd, buf, { datasync: true });
    const n = await writer.write(fh.fd, buf);
    await fh.datasync();
    return n;
  },
  writeLogged: (log, entries) => (writer.idle ? writeLoggedAtOnce(log, entries) : writeLoggedOf(nodeIo)(log, entries)),
  truncate: (fh, len) => fh.truncate(len),
  async readFile(file) {
    // O_NONBLOCK: a FIFO planted where a file belongs must not hold a thread (and every later
    // read, and the stop) until a writer comes; only a regular file is read at all.
    const fh = await openNoFollow(file, C.O_RDONLY | C.O_NONBLOCK);
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw notRegularFile(st);
      return await fh.readFile();
    } finally {
      await fh.close();
    }
  },
  read: async (fh, buf, position) => (await fh.read(buf, 0, buf.length, position)).bytesRead,
  size: async (fh) => (await fh.stat()).size,
  inode: async (fh) => (await fh.stat()).ino,
  rename: (from, to) => fs.rename(from, to),
  mkdir: async (dir, mode) => {
    try {
      await fs.mkdir(dir, { mode });
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw err;
    }
  },
  unlink: (file) => fs.unlink(file),
  readdir: (dir) => fs.readdir(dir),
  lstat: (file) => fs.lstat(file),
  lstatNow: (file) => lstatSync(file, { throwIfNoEntry: false }),
  realpath: (file) => fs.realpath(file),
};

async function writeAll(fh: fs.FileHandle, buf: Buffer): Promise<number> {
  let off = 0;
  while (off < buf.length) off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
  return off;
}

/** Past this many bytes (lines and records), a logged batch goes as its calls one after the other, as a big write does (BATCHED_WRITE_MAX). */
const LOGGED_AT_ONCE_MAX = BATCHED_WRITE_MAX;

/**
 * `writeLogged` as one group of the idle writer thread (WriterThread.writeGroup): the lines, each
 * record guarded by its line, and the log's sync (a write of no bytes) after them.
 */
async function writeLoggedAtOnce(log: fs.FileHandle, entries: readonly LoggedLine[]): Promise<(LineNotWritten | undefined)[]> {
  const writes: GroupWrite[] = [];
  const lineAt: (number | undefined)[] = [];
  let bytes = 0;
  for (const e of entries) {
    lineAt.push(e.line ? writes.push({ fd: e.line.fh.fd, buf: e.line.buf }) - 1 : undefined);
    bytes += (e.line?.buf.length ?? 0) + e.record.length;
  }
  // Stryker disable next-line ConditionalExpression,EqualityOperator: either road writes the same bytes in the same order; only the hand-offs differ
  if (bytes > LOGGED_AT_ONCE_MAX || writes.length + entries.length >= BATCH_JOBS) return writeLoggedOf(nodeIo)(log, entries);
  const recordAt = entries.map((e, i) => writes.push({ fd: log.fd, buf: e.record, after: lineAt[i] }) - 1);
  writes.push({ fd: log.fd, buf: Buffer.alloc(0), datasync: true });
  return loggedOutcome(await writer.writeGroup(writes), lineAt, recordAt, writes.length - 1);
}

/**
 * `writeLogged` made of `io`'s own calls: each line's `write`, then one `writeSynced` of the
 * records of the lines written.
 */
export function writeLoggedOf(io: Io): Io['writeLogged'] {
  return async (log, entries) => {
    const out = await Promise.all(entries.map(async (e) => {
      if (!e.line) return undefined;
      try {
        await io.write(e.line.fh, e.line.buf);
        return undefined;
      } catch (err) {
        return new LineNotWritten(err as Error);
      }
    }));
    const records = entries.filter((_, i) => !out[i]).map((e) => e.record);
    if (records.length > 0) await io.writeSynced(log, records.length === 1 ? (records[0] as Buffer) : Buffer.concat(records));
    return out;
  };
}

/**
 * `appendThenReplace` made of `io`'s own calls, one after the other: its `write` (or
 * `writeSynced`), then its `writeAtomic`.
 */
export function appendThenReplaceOf(io: Io): Io['appendThenReplace'] {
  return async (line, file, data, opts) => {
    try {
      await (line.sync ? io.writeSynced(line.fh, line.buf) : io.write(line.fh, line.buf));
    } catch (err) {
      throw new LineNotWritten(err as Error);
    }
    return io.writeAtomic(file, data, opts);
  };
}

/**
 * Copies an Io with some calls replaced: the seam tests use. A copy that replaces `write` or
 * `datasync` but not `writeSynced` makes its `writeSynced` of the two, so a test that injects a
 * failed write or sync (or counts them) sees every durable write too; one that replaces any of
 * them but not `writeLogged` makes that of its `write` and `writeSynced`; one that replaces any of
 * them or `writeAtomic` but not `appendThenReplace` makes that of its own calls, so it sees (and
 * can fail) a commit's key line and its replace too.
 */
export function withIo(overrides: Partial<Io>): Io {
  const io: Io = { ...nodeIo, ...overrides };
  if (!overrides.writeSynced && (overrides.write || overrides.datasync)) {
    io.writeSynced = async (fh, buf) => {
      const n = await io.write(fh, buf);
      await io.datasync(fh);
      return n;
    };
  }
  if (!overrides.writeLogged && (overrides.write || overrides.datasync || overrides.writeSynced)) io.writeLogged = writeLoggedOf(io);
  if (!overrides.appendThenReplace && (overrides.write || overrides.datasync || overrides.writeSynced || overrides.writeAtomic)) {
    io.appendThenReplace = appendThenReplaceOf(io);
  }
  return io;
}
