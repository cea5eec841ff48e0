// The bytes of unfinished messages held for all connections together: the per-connection
// message limit alone let 60 connections each hold a 60 MB partial frame (3.7 GB; docs/limits.md).
import type { FramingError } from './framing-error.js';
import { tooLarge } from './framing-error.js';
import { DEFAULT_PARTIAL_FRAME_BYTES_TOTAL } from './limits.js';

/**
 * A byte budget shared by every connection's decoder. A decoder takes bytes before it holds them
 * (an LSP body's declared length, an NDJSON line's pieces) and gives them back when the message
 * is complete or the connection ends; a decoder refused is answered -32040 and its connection
 * closed, so the bytes in partial frames never pass the limit, whoever sends them.
 */
export class FrameBudget {
  private held = 0;

  constructor(readonly limit: number) {
    if (!(limit > 0)) throw new RangeError(`the partial-frame budget must be a positive number of bytes. Got ${limit}`);
  }

  /** Bytes held now, for every connection. */
  get used(): number {
    return this.held;
  }

  /**
   * Takes `bytes` if they fit. When nothing is held, any one message fits, so a limit below
   * --max-message-bytes can never refuse a message that is alone.
   */
  take(bytes: number): boolean {
    if (this.held > 0 && this.held + bytes > this.limit) return false;
    this.held += bytes;
    return true;
  }

  give(bytes: number): void {
    this.held -= bytes;
    if (this.held < 0) throw new Error(`partial-frame budget underflow: ${bytes} bytes given back, more than were taken`);
  }
}

/** The budget every transport of this process shares unless given its own (tests). */
export const processFrameBudget = new FrameBudget(DEFAULT_PARTIAL_FRAME_BYTES_TOTAL);

/** The -32040 for a message the shared partial-frame budget cannot hold now. */
export function overBudget(budget: FrameBudget, bytes: number): FramingError {
  return tooLarge(
    `server busy: unfinished messages from all clients may hold at most ${budget.limit} bytes and ${budget.used} are held; ` +
      `this message needs ${bytes} more. Send it again later`,
  );
}
