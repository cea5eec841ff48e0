// The writer thread's side of writer-thread.ts: it writes each batch the main thread announces,
// in order, from the bytes and the plan (one fd and one length per job) shared with it, and
// answers once per batch. It imports only node: modules, so tsc's output of this file runs as is
// and the CLI bundle carries it as a second entry (scripts/bundle-cli.mjs).
import { writeSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

/** What writer-thread.ts hands the worker when it starts it. */
export interface WriterWorkerData {
  bytes: SharedArrayBuffer;
  plan: SharedArrayBuffer;
}

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
  return { message: String(err?.message), code: err?.code, errno: err?.errno, syscall: err?.syscall };
}

/** Writes the first `jobs` jobs of the plan, each in full, one after the other. */
export function writeBatch(bytes: Buffer, plan: Int32Array, jobs: number): BatchAnswer {
  let failed: (WireError | null)[] | undefined;
  let at = 0;
  for (let i = 0; i < jobs; i++) {
    const fd = plan[2 * i]!;
    const len = plan[2 * i + 1]!;
    let off = 0;
    try {
      while (off < len) off += writeSync(fd, bytes, at + off, len - off);
    } catch (e) {
      failed ??= new Array<WireError | null>(jobs).fill(null);
      failed[i] = wireError(e);
    }
    at += len;
  }
  return failed ?? null;
}

if (parentPort) {
  const port = parentPort;
  const data = workerData as WriterWorkerData;
  const bytes = Buffer.from(data.bytes);
  const plan = new Int32Array(data.plan);
  port.on('message', (jobs: number) => port.postMessage(writeBatch(bytes, plan, jobs)));
}
