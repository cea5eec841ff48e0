// Whole-file replaces (state.json, the transcript metas, the high-water marks) leave the main
// thread in one hand-off each. Through libuv's thread pool a replace was seven hops in turn (open,
// write, chmod, close, rename, and a stat each side to tell our file from another writer's), each
// waking a pool thread and then the main thread: on this 2-core machine most of a
// session/setResumeToken's time (docs/performance.md, "The Go package's round trips"). Here one
// worker makes the whole replace with synchronous calls (writer-worker.ts, replaceFile) and
// answers once, with the stamp of the file it wrote. The main thread still never blocks on a
// disk.
//
// A thread of its own, not the writer thread's: a replace with sync:true waits for fdatasync
// (milliseconds), which must not hold up the appends queued behind it. Jobs are answered in the
// order they were posted; callers that need an order between replaces of one file await each
// (the store's queues do).
import { Worker } from 'node:worker_threads';
import type { FileStamp, ReplaceAnswer, ReplaceJob } from './writer-worker.js';
import { workerEntry } from './writer-thread.js';

interface Waiting {
  resolve(stamp: FileStamp): void;
  reject(err: Error): void;
}

export class ReplaceThread {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly waiting = new Map<number, Waiting>();

  /** Replaces `file` with `data` (see replaceFile); resolves with the stamp of the file written. */
  replace(file: string, data: string | Uint8Array, opts: { mode: number; sync: boolean }): Promise<FileStamp> {
    return new Promise<FileStamp>((resolve, reject) => {
      let worker: Worker;
      try {
        worker = this.started();
      } catch (err) {
        reject(err as Error);
        return;
      }
      // A buffer of its own, transferred: nothing is copied across, and a pooled Buffer's
      // neighbours are never handed over.
      const bytes = typeof data === 'string' ? Buffer.from(data) : data;
      const copy = new ArrayBuffer(bytes.length);
      new Uint8Array(copy).set(bytes);
      const id = this.nextId++;
      this.waiting.set(id, { resolve, reject });
      const job: ReplaceJob = { id, file, data: copy, mode: opts.mode, sync: opts.sync };
      // Referenced only while a replace is out: an idle thread never keeps the process alive.
      worker.ref();
      worker.postMessage(job, [copy]);
    });
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const entry = workerEntry();
    const worker = new Worker(entry.filename, {
      eval: entry.eval,
      // Not the parent's flags (a loader such as tsx, --input-type): it needs none of them.
      execArgv: [],
      // It holds one file at a time, outside its heap (a transferred ArrayBuffer): a small heap
      // keeps the process's RSS down.
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
    });
    worker.on('message', (a: ReplaceAnswer) => this.answered(a));
    // A worker that fails takes its unanswered replaces with it: each caller learns why (nothing
    // is renamed into place after that), and the next replace starts a new worker.
    worker.on('error', (err) => this.lost(worker, err));
    worker.on('exit', (code) => this.lost(worker, new Error(`the replace thread exited (code ${code}) with replaces unanswered`)));
    // After the listeners: adding a 'message' listener refs the worker again (Node 20). Started
    // by the first replace, not ahead, so a start that writes nothing pays nothing for it.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private answered(a: ReplaceAnswer): void {
    const w = this.waiting.get(a.id);
    this.waiting.delete(a.id);
    if (this.waiting.size === 0) this.worker?.unref();
    if (!w) return;
    if ('stamp' in a) w.resolve(a.stamp);
    else w.reject(Object.assign(new Error(a.error.message), { code: a.error.code, errno: a.error.errno, syscall: a.error.syscall }));
  }

  private lost(worker: Worker, err: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    const all = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of all) w.reject(err);
  }
}
