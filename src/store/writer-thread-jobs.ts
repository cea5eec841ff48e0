// What the writer thread (writer-thread.ts) is asked for and how much one batch holds: the bounds
// of the region shared with its worker, the writes and replaces waiting for it, and the errors a
// write or a replace's line is answered with.
import { GUARD_FAILED } from './writer-worker-control.js';
import type { FileStamp } from './writer-worker.js';

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

export interface PendingReplace {
  readonly file: string;
  /** The file's bytes in pieces, copied once into the shared region in order. */
  readonly bytes: readonly Uint8Array[];
  readonly mode: number;
  readonly sync: boolean;
  readonly line: LineFirst | undefined;
  resolve(stamp: FileStamp): void;
  reject(err: Error): void;
}

export interface Job {
  readonly fd: number;
  readonly buf: Buffer;
  readonly datasync: boolean;
  /** 0, or 1 + the index in its batch of the job whose failure leaves this one out (writeGroup). */
  readonly guard: number;
  resolve(n: number): void;
  reject(err: Error): void;
}
