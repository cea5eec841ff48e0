// Small appends leave the main thread in one hand-off per turn of the event loop. Every append is a
// write(2) to its own file; through the libuv thread pool each one cost a wake-up of a pool thread
// and one of the main thread, about half the server's CPU per append at 64 connections
// (docs/performance.md, "CPU per append"). Here the writes asked for in one turn travel together to one
// worker thread, which writes them in order and answers once: the hand-off is paid per turn, not
// per append, and the main thread still never blocks on a disk (a stalled disk stalls the writers
// waiting for it, not the readers).
//
// The hand-off is a futex wake (Atomics.notify on a shared word the worker sleeps on in
// Atomics.wait), not a message: a message added a serialisation and a uv_async to the wake-up
// itself (docs/performance.md, "Waking the writer thread"). The answer comes back as a message,
// which is what wakes the event loop. A durable write (`datasync`) is its write and its
// fdatasync in the same job. The sleeping worker holds nothing: unreferenced, it never keeps the
// process alive, and a process that exits interrupts its wait.
//
// Order: a caller awaits its write before it writes to the same file again (AppendFile, the
// write-ahead log), and one worker writes its batches in the order they were posted, so a file's
// bytes land in the order they were asked for. A handle is never closed while its write is out:
// its owner closes it only after its queue has settled.
//
// A group (`writeGroup`) is one batch posted at once whose writes may depend on each other: the
// write-ahead log's batch with the lines its records are about, each record left out when its
// line failed (a guard per job in the shared plan), then the log's sync.
//
// Whole-file replaces (state.json, metas, marks) go to the same worker, one message each
// (`replace`, writer-worker.ts's replaceFile): through the thread pool a replace was a dozen
// hand-offs in turn; a keyed commit's line in state-keys.log travels in its replace's message,
// written first (`replace`'s `line`). The same thread, not one of its own: a second worker cost the server ~18 MB
// of RSS (~30 MB at 5 000 sessions), past its 150 MB bound. The price is that a batch of appends
// posted while a replace runs waits for it (~0.2 ms; with --durability sync, its fsync).
import type { execFileSync as ExecFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { holdV8FlagDefaults } from '../common/v8-flag-hold.js';
import { CTL, GUARD_FAILED, PLAN_DATASYNC, PLAN_INTS } from './writer-worker-control.js';
import type { BatchAnswer, FileStamp, ReplaceAnswer, ReplaceJob, WriterWorkerData } from './writer-worker.js';

/**
 * The worker's file name in the CLI bundle, which defines it (scripts/bundle-cli.mjs): its second
 * entry, dist/src/writer-worker.cjs, a CommonJS script, which a Worker starts for less CPU than an
 * ES module. Undefined elsewhere.
 */
declare const HS_WRITER_WORKER: string | undefined;

/**
 * The worker's module: beside this one (tsc's dist/src/store/writer-worker.js, the library), or
 * beside the CLI bundle (esbuild leaves `new URL(…, import.meta.url)` alone). Run from src/ (the
 * tests), the script compiled from the TypeScript source (sourceWorkerScript).
 */
function workerEntry(): { filename: string | URL; eval: boolean } {
  const bundled = typeof HS_WRITER_WORKER === 'string' ? HS_WRITER_WORKER : undefined;
  if (!import.meta.url.endsWith('.ts')) return { filename: new URL(bundled ?? './writer-worker.js', import.meta.url), eval: false };
  return { filename: sourceWorkerScript(), eval: true };
}

let sourceScript: string | undefined;

/**
 * Run from src/ by tsx, Node 20 applies no `--import` loader inside a worker: the worker's module
 * and what it imports are compiled into one CommonJS script by esbuild (a devDependency, as tsx is,
 * and what builds dist/src/writer-worker.cjs), once per process, and each worker evaluates it.
 * Registering tsx's require hook in each new thread instead cost ~175 ms of CPU per start against
 * ~45 ms, and the tests start ~25 threads. The esbuild binary runs as a child, not through the
 * esbuild module, whose synchronous calls start a worker thread of their own (a test counting the
 * threads a writer starts would count it).
 */
function sourceWorkerScript(): string {
  if (sourceScript === undefined) {
    const require = createRequire(import.meta.url);
    const { execFileSync } = require('node:child_process') as { execFileSync: typeof ExecFileSync };
    const esbuild = path.join(path.dirname(require.resolve('esbuild/package.json')), 'bin', 'esbuild');
    const entry = fileURLToPath(new URL('./writer-worker.ts', import.meta.url));
    sourceScript = execFileSync(esbuild, [entry, '--bundle', '--platform=node', '--format=cjs', '--target=node20', '--log-level=warning'], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
  }
  return sourceScript;
}

/** Past this size a write goes to the thread pool alone: the copy into a batch would cost more than the hand-off. */
export const BATCHED_WRITE_MAX = 64 * 1024;
/**
 * The bytes of one batch, shared with the worker: a batch is copied in and announced with its job
 * count, nothing is allocated or transferred per hand-off (a transferred buffer per batch cost
 * more than the message itself). Only one batch is out at a time, so one region suffices.
 */
export const BATCH_BYTES = 1024 * 1024;
/** Jobs one batch may hold (each its fd, length and flags in the shared plan). */
export const BATCH_JOBS = 4096;

/** One write of a group (writeGroup): `after`, the index in the group of a write whose failure leaves this one out. */
export interface GroupWrite {
  readonly fd: number;
  readonly buf: Buffer;
  readonly datasync?: boolean;
  readonly after?: number;
}

/** A write of a group left out because the one it depends on failed (writeGroup). */
export class GuardFailed extends Error {
  readonly code = GUARD_FAILED;
}

/** A line appended to an open file (its fd) before a replace, in the same hand-off (`replace`). */
export interface LineFirst {
  readonly fd: number;
  readonly buf: Uint8Array;
  readonly datasync: boolean;
}

/** A replace's line could not be written (or synced): nothing was replaced. `cause` says why. */
export class LineNotWritten extends Error {
  constructor(override readonly cause: Error) {
    super(cause.message);
  }
}

interface PendingReplace {
  readonly file: string;
  /** The file's bytes in pieces, copied once into the shared region in order. */
  readonly bytes: readonly Uint8Array[];
  readonly mode: number;
  readonly sync: boolean;
  readonly line: LineFirst | undefined;
  resolve(stamp: FileStamp): void;
  reject(err: Error): void;
}

interface Job {
  readonly fd: number;
  readonly buf: Buffer;
  readonly datasync: boolean;
  /** 0, or 1 + the index in its batch of the job whose failure leaves this one out (writeGroup). */
  readonly guard: number;
  resolve(n: number): void;
  reject(err: Error): void;
}

/** A running worker and its view of a batch: the bytes, and one fd and one length per job. */
interface Thread {
  readonly worker: Worker;
  readonly ctl: Int32Array;
  readonly bytes: Buffer;
  readonly plan: Int32Array;
}

export class WriterThread {
  private thread: Thread | undefined;
  private queued: Job[] = [];
  /**
   * The batch the worker is writing. One at a time: what is asked for meanwhile waits and goes
   * with the next one (a group commit), so the worker is woken once per batch, not once per turn.
   */
  private out: Job[] | undefined;
  /** Replaces waiting for the one out; one at a time, through one region shared with the worker. */
  private readonly replacesQueued: PendingReplace[] = [];
  private replaceOut: PendingReplace | undefined;
  /**
   * The bytes of the replace out, shared with the worker: grown (to a power of two) for a bigger
   * file, never allocated per replace. A fresh buffer per replace of a 1.8 MB state.json (5 000
   * sessions) left ~25 MB more RSS after the mutations bench.
   */
  private region: SharedArrayBuffer | undefined;

  /**
   * Replaces `file` with `data` (writer-worker.ts, replaceFile); resolves with the stamp of the
   * file written. With `line`, its bytes are first appended to its fd (and fdatasync'ed when it
   * says so) in the same hand-off, and the file is replaced only once they are: a line that fails
   * rejects with LineNotWritten, nothing replaced.
   */
  replace(file: string, data: string | Uint8Array | readonly Uint8Array[], opts: { mode: number; sync: boolean }, line?: LineFirst): Promise<FileStamp> {
    return new Promise<FileStamp>((resolve, reject) => {
      const bytes = typeof data === 'string' ? [Buffer.from(data)] : data instanceof Uint8Array ? [data] : data;
      this.replacesQueued.push({ file, bytes, mode: opts.mode, sync: opts.sync, line, resolve, reject });
      if (!this.replaceOut) this.postReplace();
    });
  }

  /**
   * Writes all of `buf` to `fd` at its offset; resolves with its length once it is written (and,
   * with `datasync`, once `fd` was fdatasync'ed after it: one hand-off for a durable write).
   */
  write(fd: number, buf: Buffer, { datasync = false }: { datasync?: boolean } = {}): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      if (this.queued.length === 0 && !this.out) setImmediate(() => this.flush());
      this.queued.push({ fd, buf, datasync, guard: 0, resolve, reject });
    });
  }

  /**
   * Writes `writes` in order in one hand-off, as `write` does each (`datasync` a sync after it; a
   * write of no bytes is that sync alone), except that a write whose `after` failed is left out:
   * a write-ahead record goes to the log only when the line it records went to its file, and the
   * log's sync comes after them, all in one wake of the writer thread. Resolves with each write's
   * error (GuardFailed when left out), or undefined when it was made. Only for a writer thread
   * that is `idle`, and for a group that fits one batch (BATCH_JOBS, BATCH_BYTES): its writes are
   * then the first of the next batch, so an `after` is an index in it. Otherwise it rejects
   * with nothing written.
   */
  writeGroup(writes: readonly GroupWrite[]): Promise<(Error | undefined)[]> {
    let bytes = 0;
    for (const w of writes) bytes += w.buf.length;
    if (!this.idle || writes.length > BATCH_JOBS || bytes > BATCH_BYTES) {
      return Promise.reject(new Error('a group is written only by an idle writer thread, and only one that fits a batch'));
    }
    if (writes.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const out: (Error | undefined)[] = new Array<Error | undefined>(writes.length).fill(undefined);
      let left = writes.length;
      const settled = (i: number, err: Error | undefined): void => {
        out[i] = err;
        if (--left === 0) resolve(out);
      };
      for (const [i, w] of writes.entries()) {
        // Stryker disable next-line ConditionalExpression: an `after` at or past the write itself names no earlier write
        const guard = w.after !== undefined && w.after < i ? w.after + 1 : 0;
        this.queued.push({ fd: w.fd, buf: w.buf, datasync: w.datasync ?? false, guard, resolve: () => settled(i, undefined), reject: (err) => settled(i, err) });
      }
      // Posted at once, not after the turn as `write`'s are: a group is the write-ahead log's
      // batch, which already gathers what came with it, and it holds a sync that writes posted
      // later in the turn would only wait behind.
      this.flush();
    });
  }

  /** Nothing out and nothing waiting: a job posted now is the only one the worker has. */
  get idle(): boolean {
    return !this.out && this.queued.length === 0 && !this.replaceOut && this.replacesQueued.length === 0;
  }

  private postReplace(): void {
    const next = this.replacesQueued.shift();
    if (!next) return;
    let thread: Thread;
    try {
      thread = this.started();
    } catch (err) {
      next.reject(err as Error);
      this.postReplace();
      return;
    }
    // The line's bytes first, then the file's.
    const skip = next.line?.buf.length ?? 0;
    let length = 0;
    for (const b of next.bytes) length += b.length;
    const total = skip + length;
    // Stryker disable next-line ConditionalExpression,EqualityOperator: a fresh region for a replace that fits the one there holds the same bytes; only the memory differs (bench/)
    if (!this.region || this.region.byteLength < total) {
      this.region = new SharedArrayBuffer(2 ** Math.ceil(Math.log2(Math.max(4096, total))));
    }
    const region = new Uint8Array(this.region);
    if (next.line) region.set(next.line.buf);
    let at = skip;
    for (const b of next.bytes) {
      region.set(b, at);
      at += b.length;
    }
    this.replaceOut = next;
    const line = next.line && { fd: next.line.fd, length: skip, datasync: next.line.datasync };
    const job: ReplaceJob = { file: next.file, region: this.region, length, mode: next.mode, sync: next.sync, line };
    thread.worker.ref();
    thread.worker.postMessage(job);
    wake(thread);
  }

  private flush(): void {
    let thread: Thread;
    try {
      thread = this.started();
    } catch (err) {
      const batch = this.queued;
      this.queued = [];
      for (const j of batch) j.reject(err as Error);
      return;
    }
    // What fits goes now (a write is at most BATCHED_WRITE_MAX, so the first always fits); the
    // rest goes with the next batch, in order.
    let take = 0;
    let at = 0;
    for (const j of this.queued) {
      if (take === BATCH_JOBS || at + j.buf.length > BATCH_BYTES) break;
      at += j.buf.copy(thread.bytes, at);
      thread.plan[PLAN_INTS * take] = j.fd;
      thread.plan[PLAN_INTS * take + 1] = j.buf.length;
      thread.plan[PLAN_INTS * take + 2] = j.datasync ? PLAN_DATASYNC : 0;
      thread.plan[PLAN_INTS * take + 3] = j.guard;
      take++;
    }
    // The batch keeps the first `take` jobs; the rest (usually none) stays queued.
    const batch = this.queued;
    this.queued = batch.splice(take);
    // Referenced only while a batch is out: an idle writer never keeps the process alive, and a
    // pending write always does.
    thread.worker.ref();
    this.out = batch;
    Atomics.store(thread.ctl, CTL.JOBS, take);
    wake(thread);
  }

  private started(): Thread {
    if (this.thread) return this.thread;
    const ctl = new SharedArrayBuffer(CTL.LENGTH * Int32Array.BYTES_PER_ELEMENT);
    const bytes = new SharedArrayBuffer(BATCH_BYTES);
    const plan = new SharedArrayBuffer(BATCH_JOBS * PLAN_INTS * Int32Array.BYTES_PER_ELEMENT);
    const entry = workerEntry();
    const workerData: WriterWorkerData = { ctl, bytes, plan };
    // V8 flags set at run time (serve's heap settings) would make the worker compile node's
    // built-in modules without node's code cache (~30 ms of CPU): they are held at V8's defaults
    // until the worker has loaded, which its first answer (or its end) shows (common/v8-flag-hold.ts).
    const release = holdV8FlagDefaults();
    let worker: Worker;
    try {
      worker = new Worker(entry.filename, {
        eval: entry.eval,
        workerData,
        // Not the parent's flags (a loader such as tsx, --input-type): it needs none of them.
        // Stryker disable next-line ArrayDeclaration: a list with a word that is no flag starts the same worker
        execArgv: [],
        // It holds no more than one batch at a time: a small heap keeps the process's RSS down.
        // Stryker disable next-line ObjectLiteral: without the bound only the memory differs (bench/)
        resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
      });
    } catch (err) {
      release();
      throw err;
    }
    worker.on('message', (answer: BatchAnswer | ReplaceAnswer) => {
      release();
      if (answer !== null && !Array.isArray(answer)) this.replaced(answer);
      else this.answered(answer);
    });
    // A worker that fails takes its unanswered batches with it: each caller learns why, and the
    // next write starts a new worker.
    worker.on('error', (err) => {
      release();
      this.lost(worker, err);
    });
    worker.on('exit', (code) => {
      release();
      this.lost(worker, new Error(`the writer thread exited (code ${code}) with writes unanswered`));
    });
    // After the listeners: adding a 'message' listener refs the worker again (Node 20). It is
    // started by the first write, not ahead: starting it with the store cost spawn-to-first-reply
    // ~13 ms (1.61 × → 1.79 × the bare server), and the first append pays its 30–80 ms once.
    worker.unref();
    this.thread = { worker, ctl: new Int32Array(ctl), bytes: Buffer.from(bytes), plan: new Int32Array(plan) };
    return this.thread;
  }

  /** `failed`: null when every write of the batch succeeded, else each one's error or null. */
  private answered(failed: BatchAnswer): void {
    const batch = this.out;
    this.out = undefined;
    if (this.queued.length > 0) this.flush();
    else if (!this.replaceOut) {
      // Stryker disable next-line OptionalChaining: a thread's answers come before its exit, so the thread that answers is the current one
      this.thread?.worker.unref();
    }
    // Stryker disable next-line ConditionalExpression: equivalent, a batch answer comes only for a batch out (forced true is killed, but goes with it)
    if (!batch) return;
    for (const [i, j] of batch.entries()) {
      const e = failed?.[i];
      if (!e) j.resolve(j.buf.length);
      else if (e.code === GUARD_FAILED) j.reject(new GuardFailed(e.message));
      else j.reject(Object.assign(new Error(e.message), { code: e.code, errno: e.errno, syscall: e.syscall }));
    }
  }

  private replaced(a: ReplaceAnswer): void {
    const r = this.replaceOut;
    this.replaceOut = undefined;
    if (this.replacesQueued.length > 0) this.postReplace();
    else if (!this.out) {
      // Stryker disable next-line OptionalChaining: a thread's answers come before its exit, so the thread that answers is the current one
      this.thread?.worker.unref();
    }
    // Stryker disable next-line ConditionalExpression: equivalent, a replace answer comes only for a replace out (forced true is killed, but goes with it)
    if (!r) return;
    if ('stamp' in a) r.resolve(a.stamp);
    else {
      const err = Object.assign(new Error(a.error.message), { code: a.error.code, errno: a.error.errno, syscall: a.error.syscall });
      r.reject(a.line ? new LineNotWritten(err) : err);
    }
  }

  private lost(worker: Worker, err: Error): void {
    if (this.thread?.worker !== worker) return;
    this.thread = undefined;
    const batch = this.out ?? [];
    this.out = undefined;
    for (const j of batch) j.reject(err);
    // A replace it held may or may not have been renamed into place: its caller is told it failed.
    const r = this.replaceOut;
    this.replaceOut = undefined;
    r?.reject(err);
    // postReplace posts nothing when no replace waits; a flush must never run with nothing queued.
    setImmediate(() => this.postReplace());
    if (this.queued.length > 0) setImmediate(() => this.flush());
  }
}

/** Wakes the worker for what was just posted (a futex wake, no message: writer-worker.ts, serve). */
function wake(thread: Thread): void {
  Atomics.add(thread.ctl, CTL.WAKE, 1);
  Atomics.notify(thread.ctl, CTL.WAKE);
}
