// The writer thread's side of writer-thread.ts: it sleeps on a shared control word until the main
// thread wakes it (serve), then writes the batch announced there, in order, from the bytes and
// the plan (fd, length and flags per job) shared with it, answering once per batch, and replaces a
// whole file (replaceFile) for each replace message waiting, answering each. It imports node:
// modules and write-file-atomic only; the CLI bundle carries it as a second entry
// (scripts/bundle-cli.mjs).
import { constants as C, closeSync, fdatasyncSync, fstatSync, lstatSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import writeFileAtomic from 'write-file-atomic';
import { CTL, GUARD_FAILED, PLAN_DATASYNC, PLAN_INTS } from './writer-worker-control.js';

/** What writer-thread.ts hands the worker when it starts it. */
export interface WriterWorkerData {
  /** The control words (CTL). */
  ctl: SharedArrayBuffer;
  bytes: SharedArrayBuffer;
  plan: SharedArrayBuffer;
}

/** What tells one version of a file from another without reading it. */
export interface FileStamp {
  ino: number;
  size: number;
  mtimeMs: number;
}

/**
 * One whole-file replace, as writer-thread.ts posts it: its bytes are the `length` bytes of
 * `region` after the line's. With `line`, the first `line.length` bytes of `region` are first
 * appended to `line.fd` (fdatasync'ed when `line.datasync`), and the file is replaced only once
 * they are: a commit's idempotency keys and its state.json in one hand-off (state-keys.ts).
 */
export interface ReplaceJob {
  file: string;
  region: SharedArrayBuffer;
  length: number;
  mode: number;
  sync: boolean;
  line?: { fd: number; length: number; datasync: boolean } | undefined;
}

/**
 * The answer to a replace: the stamp of the file written, or why it failed; `line` when it was
 * the line's write (or sync) that failed, so nothing was replaced.
 */
export type ReplaceAnswer = { stamp: FileStamp } | { error: WireError; line?: true };

/** A failed write as it crosses to the main thread (an Error's own fields do not survive the copy). */
export interface WireError {
  message: string;
  code?: string;
  errno?: number;
  syscall?: string;
}

/** The answer to a batch: null when every write succeeded, else each job's error or null. */
export type BatchAnswer = (WireError | null)[] | null;

function wireError(e: unknown): WireError {
  const err = e as NodeJS.ErrnoException | null | undefined;
  // Stryker disable next-line OptionalChaining: every call here throws an Error; the `?.` only keeps a throw of null from ending the thread
  return { message: String(err?.message), code: err?.code, errno: err?.errno, syscall: err?.syscall };
}

/** The answer of a job left out because the job it is guarded by failed. */
const guardFailed = (): WireError => ({ message: `${GUARD_FAILED}: not written, the write it depends on failed`, code: GUARD_FAILED });

/**
 * Writes the first `jobs` jobs of the plan, each in full, one after the other; a job flagged
 * PLAN_DATASYNC is then fdatasync'ed, so a durable write costs one hand-off, not a second one
 * through the thread pool for its sync. A job whose write failed is not synced. A job whose guard
 * (an earlier job of the batch) failed is left out, answering GUARD_FAILED.
 */
export function writeBatch(bytes: Buffer, plan: Int32Array, jobs: number): BatchAnswer {
  let failed: (WireError | null)[] | undefined;
  let at = 0;
  for (let i = 0; i < jobs; i++) {
    const fd = plan[PLAN_INTS * i]!;
    const len = plan[PLAN_INTS * i + 1]!;
    const flags = plan[PLAN_INTS * i + 2]!;
    const guard = plan[PLAN_INTS * i + 3]!;
    if (guard > 0 && failed?.[guard - 1]) {
      failed[i] = guardFailed();
      at += len;
      continue;
    }
    let off = 0;
    try {
      while (off < len) off += writeSync(fd, bytes, at + off, len - off);
      if (flags & PLAN_DATASYNC) fdatasyncSync(fd);
    } catch (e) {
      failed ??= new Array<WireError | null>(jobs).fill(null);
      failed[i] = wireError(e);
    }
    at += len;
  }
  return failed ?? null;
}

/** The synchronous calls replaceFile makes beside write-file-atomic's own: the real ones, or a test's recording copies. */
export interface ReplaceOps {
  /** write-file-atomic's synchronous replace (its own temp file, fsync, chmod, rename). */
  writeFileAtomic(file: string, data: Uint8Array, opts: { mode: number; fsync: boolean; tmpfileCreated(tmp: string): void }): void;
  /** lstat, undefined when nothing is at the name. */
  lstat(file: string): { isSymbolicLink(): boolean; ino: number; size: number; mtimeMs: number } | undefined;
  open(file: string, flags: number): number;
  fstat(fd: number): { isFile(): boolean; nlink: number; size: number; uid: number };
  write(fd: number, buf: Uint8Array, off: number, len: number): number;
  close(fd: number): void;
  rename(from: string, to: string): void;
  unlink(file: string): void;
}

export const fsReplaceOps: ReplaceOps = {
  writeFileAtomic: (file, data, opts) => writeFileAtomic.sync(file, Buffer.from(data.buffer, data.byteOffset, data.length), opts),
  lstat: (file) => lstatSync(file, { throwIfNoEntry: false }),
  open: (file, flags) => openSync(file, flags),
  fstat: (fd) => fstatSync(fd),
  write: (fd, buf, off, len) => writeSync(fd, buf, off, len),
  close: (fd) => closeSync(fd),
  rename: (from, to) => renameSync(from, to),
  unlink: (file) => unlinkSync(file),
};

/** What write-file-atomic's own write(2) is handed: the data is already in its temp file. */
const EMPTY = new Uint8Array(0);

/**
 * Replaces `file` whole with write-file-atomic's synchronous replace (temp file `<file>.<uint32>`
 * beside it, the names sweep.ts removes after a crash; fsync when `sync`; chmod; rename; the temp
 * file removed when the write fails), behind the store's own checks, and returns the stamp of the
 * file now at the name. Run on the writer thread (writer-thread.ts, `replace`), so the whole
 * replace is one hand-off and never blocks the event loop.
 *
 * - write-file-atomic resolves `file` through a symbolic link and writes the link's target: a
 *   link at `file` is replaced instead, as Go's rename replaces it (the data goes to a fresh
 *   name beside it, renamed over the link), so state.json is never written through a link.
 * - Its temp name is predictable and opened without O_EXCL, so a link planted there would be
 *   followed. Only the state dir's owner can plant one: the store refuses a state dir that its
 *   group or others may write, or that another user owns (state-dir.ts), and every folder
 *   below it is checked by `confine`. The temp file is checked once created, before any byte
 *   of ours goes in: a regular file of ours with one link, else the write fails.
 * - It writes the data with one write(2) whose count it does not check, so a disk that fills
 *   mid-write would rename a short file into place. The data is written here instead, in full
 *   (a loop that surfaces ENOSPC), from its `tmpfileCreated` hook, which it calls before its own
 *   write; its own write is handed no bytes, so it cannot shorten or rewrite anything.
 * - It loads signal-exit while a write is in flight; on the writer thread no signal is delivered, so
 *   it never re-raises one in the server (serve keeps its own listeners all the same).
 * - It does not fsync the folder: the caller does (Io.syncDir) when the rename must survive power loss.
 *
 * The stamp is taken right after the rename: a writer that replaces the file in between is taken
 * for us (the window docs/go-compatibility.md names).
 */
export function replaceFile(file: string, data: Uint8Array, { mode, sync }: { mode: number; sync: boolean }, ops: ReplaceOps = fsReplaceOps): FileStamp {
  if (ops.lstat(file)?.isSymbolicLink()) {
    // As Go's Save (temp file + rename), the link itself is replaced: written under a fresh name
    // beside it (`<file>.<uint32>`, its own temp `<file>.<uint32>.<uint32>`, both swept after a
    // crash), then renamed over the link.
    const fresh = `${file}.${randomBytes(4).readUInt32BE(0)}`;
    replaceFile(fresh, data, { mode, sync }, ops);
    try {
      ops.rename(fresh, file);
    } catch (err) {
      try {
        ops.unlink(fresh); // the rename's error is the one to report; a start sweeps what is left
      } catch {
        // swept at the next start
      }
      throw err;
    }
  } else {
    ops.writeFileAtomic(file, EMPTY, { mode, fsync: sync, tmpfileCreated: (tmp) => fillTemp(tmp, data, ops) });
  }
  const st = ops.lstat(file);
  if (!st) throw Object.assign(new Error(`ENOENT: ${path.basename(file)} was removed right after it was written`), { code: 'ENOENT', syscall: 'lstat' });
  return { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
}

/** Writes `data` in full into the temp file write-file-atomic just created, after checking it is one. */
function fillTemp(tmp: string, data: Uint8Array, ops: ReplaceOps): void {
  let fd: number;
  try {
    fd = ops.open(tmp, C.O_WRONLY | C.O_NOFOLLOW);
  } catch (err) {
    // Stryker disable next-line OptionalChaining: open throws an Error; the `?.` only keeps a throw of null from ending the thread
    if ((err as NodeJS.ErrnoException | null)?.code === 'ELOOP') throw linkInTheWay();
    throw err;
  }
  try {
    const st = ops.fstat(fd);
    if (!st.isFile() || st.nlink !== 1 || st.size !== 0 || (process.getuid && st.uid !== process.getuid())) {
      throw Object.assign(new Error(`EEXIST: the temp file ${path.basename(tmp)} is not a fresh file of ours`), { code: 'EEXIST', syscall: 'open' });
    }
    for (let off = 0; off < data.length; ) off += ops.write(fd, data, off, data.length - off);
  } finally {
    ops.close(fd);
  }
}

/** O_NOFOLLOW's ELOOP says "too many symbolic links", which misleads (io.ts says the same). */
function linkInTheWay(): NodeJS.ErrnoException {
  return Object.assign(new Error('ELOOP: a symbolic link is in the way (the store follows none inside the state dir)'), {
    code: 'ELOOP', syscall: 'open',
  });
}

/** One replace job's answer, whatever happens: its line first, then, only once it is written, the replace. */
export function answerReplace(job: ReplaceJob): ReplaceAnswer {
  const skip = job.line?.length ?? 0;
  if (job.line) {
    try {
      const { fd, length, datasync } = job.line;
      const bytes = new Uint8Array(job.region, 0, length);
      for (let off = 0; off < length; ) off += writeSync(fd, bytes, off, length - off);
      if (datasync) fdatasyncSync(fd);
    } catch (e) {
      return { error: wireError(e), line: true };
    }
  }
  try {
    return { stamp: replaceFile(job.file, new Uint8Array(job.region, skip, job.length), job) };
  } catch (e) {
    return { error: wireError(e) };
  }
}

/**
 * The worker's loop: sleeps on the wake word, then writes the batch posted (if any) and runs the
 * replaces posted (if any), each answered by a message. A batch and a replace never depend on
 * each other (the main thread has at most one of each out, and awaits each before the next).
 * `take` returns the next posted replace, or undefined.
 */
export function serve(ctl: Int32Array, bytes: Buffer, plan: Int32Array, take: () => ReplaceJob | undefined, answer: (a: BatchAnswer | ReplaceAnswer) => void): never {
  let seen = 0;
  for (;;) {
    Atomics.wait(ctl, CTL.WAKE, seen);
    seen = Atomics.load(ctl, CTL.WAKE);
    const jobs = Atomics.exchange(ctl, CTL.JOBS, 0);
    if (jobs > 0) answer(writeBatch(bytes, plan, jobs));
    for (let job = take(); job; job = take()) answer(answerReplace(job));
  }
}

if (parentPort) {
  const port = parentPort;
  const data = workerData as WriterWorkerData;
  // The replaces come as messages, read here synchronously after a wake: this thread's own event
  // loop never turns (it sleeps in Atomics.wait), and a terminating process interrupts that wait.
  serve(new Int32Array(data.ctl), Buffer.from(data.bytes), new Int32Array(data.plan),
    () => receiveMessageOnPort(port)?.message as ReplaceJob | undefined, (a) => port.postMessage(a));
}
