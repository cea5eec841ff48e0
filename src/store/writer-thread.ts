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
import type { Worker } from 'node:worker_threads';
import { CTL, GUARD_FAILED, PLAN_DATASYNC, PLAN_INTS } from './writer-worker-control.js';
import type { BatchAnswer, FileStamp, ReplaceAnswer, ReplaceJob } from './writer-worker.js';
import type { GroupWrite, Job, LineFirst, PendingReplace } from './writer-thread-jobs.js';
import { BATCH_BYTES, BATCH_JOBS, GuardFailed, LineNotWritten } from './writer-thread-jobs.js';
import type { Thread } from './writer-thread-start.js';
import { startThread, wake } from './writer-thread-start.js';

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
    this.thread = startThread(
      (answer) => {
        if (answer !== null && !Array.isArray(answer)) this.replaced(answer);
        else this.answered(answer);
      },
      (worker, err) => this.lost(worker, err),
    );
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
