// The words writer-thread.ts and writer-worker.ts share to hand a batch over, in a module of its
// own so the main thread does not load the worker's (and write-file-atomic) to know them.

/**
 * The shared control words (Int32Array indices). The main thread wakes the worker with a futex
 * (Atomics.notify on WAKE) instead of a message: a MessagePort message costs the main thread a
 * serialisation and a uv_async per batch, ~2× the CPU of the wake (docs/performance.md,
 * "Waking the writer thread").
 */
export const CTL = {
  /** Bumped by the main thread for every batch or replace it posts; the worker waits on it. */
  WAKE: 0,
  /** The job count of the batch posted and not yet taken (0: none). */
  JOBS: 1,
  /** How many words the control block holds. */
  LENGTH: 2,
} as const;

/**
 * Ints per job in the shared plan: its fd, its length, its flags (PLAN_DATASYNC), and its guard:
 * 0, or 1 + the index in the batch of an earlier job whose failure leaves this one out (a
 * write-ahead record is written only when the line it records was: writer-thread.ts, writeGroup).
 */
export const PLAN_INTS = 4;
/** The job's file is fdatasync'ed once its bytes are written (a durable append's record); a job of no bytes is that sync alone. */
export const PLAN_DATASYNC = 1;
/** The code a job left out by its guard answers with: it wrote nothing. */
export const GUARD_FAILED = 'EGUARD';
