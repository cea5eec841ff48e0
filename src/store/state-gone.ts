// A state dir removed (or replaced by another folder at its path) after the store opened it. The
// store never makes it again (Go's `t.TempDir()` cleanup removes it and expects it to stay
// removed): every write then fails with one error that says so, and the store's owner (the shared
// server) drops the state on it. Only a new open makes the folder again, as Go's Save does.
//
// The look before a write is made once per turn of the event loop: the first write of a turn
// lstats the dir and, when it is there, the writes later in the same turn take that answer.
// Every request reaches its handler in its own setImmediate callback (vscode-jsonrpc's message
// queue), so one check phase of the loop dispatches one request per connection: with 64
// appending connections that is one lstat instead of 64. A write in the same turn as a removal
// it was not told of is ordered before it, as it already was between a per-write lstat and the
// write itself (the writer thread writes later still). What clears the answer is a setImmediate
// of its own, queued behind the turn's dispatches: a microtask would clear it after each request.
import type { Stats } from 'node:fs';
import type { Io } from './io.js';
import { StoreError } from './store-error.js';

/** The code a gone state's errors carry in `data.reason` (and `code` ENOENT, as Go's write would fail). */
export const GONE = 'gone';

/** Whether `err` says the state dir was removed since the store opened it. */
export function isStateGone(err: unknown): boolean {
  return err instanceof StoreError && err.data?.reason === GONE;
}

/** Runs `f` once the current turn of the event loop is over (setImmediate; a test may step it by hand). */
export type NextTurn = (f: () => void) => unknown;

export class StateDirWatch {
  /** Set when a look in this turn found the dir here; cleared by `nextTurn`. */
  private hereThisTurn = false;

  constructor(
    private readonly io: Io,
    /** The state dir, resolved, and its identity when the store opened it. */
    readonly dir: string,
    private readonly opened: Pick<Stats, 'dev' | 'ino'>,
    private readonly nextTurn: NextTurn = setImmediate,
  ) {}

  /** Whether the dir is gone now: nothing at its path, or another folder (one lstat, ~2 µs). */
  get gone(): boolean {
    const st = this.io.lstatNow(this.dir);
    return st === undefined || st.dev !== this.opened.dev || st.ino !== this.opened.ino;
  }

  /** `err`, or when the dir is gone, the error that says so (kind io, ENOENT, `data.reason` GONE). */
  explain(err: unknown): unknown {
    if (isStateGone(err) || !this.gone) return err;
    return this.goneError(err instanceof Error ? err.message : String(err));
  }

  /**
   * Throws the gone error when the dir is gone, before `what` (an append, a removal) touches a
   * file: a descriptor still open on a removed file would take the write without a complaint.
   * One lstat per turn (above): a dir found here is taken as here for the rest of the turn; a dir
   * found gone is looked at again by the next write.
   */
  assertHere(what: string): void {
    if (this.hereThisTurn) return;
    if (this.gone) throw this.goneError(`${what} refused`);
    this.hereThisTurn = true;
    this.nextTurn(this.turnOver);
  }

  private readonly turnOver = (): void => {
    this.hereThisTurn = false;
  };

  private goneError(why: string): StoreError {
    return new StoreError('io', `the state dir ${this.dir} was removed (${why}); the store does not make it again: `
      + 'a new open of the state does', { code: 'ENOENT', reason: GONE, dir: this.dir }, 'ENOENT');
  }
}
