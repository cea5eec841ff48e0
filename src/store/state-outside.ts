// A look at state.json for an edit by another process (by hand, another tool): its stamp (size,
// mtime, inode) against the one the store last read or wrote, and the edited document read when
// they differ. A file that cannot be loaded is logged once per version and kept as the reason
// writes are refused until it is fixed (the store's health says so meanwhile).
import path from 'node:path';
import type { Io } from './io.js';
import type { Doc } from './state-document.js';
import { readDocument, stampOf } from './state-file.js';
import { ioError, StoreError } from './store-error.js';
import type { StoreLog } from './store-log.js';
import type { FileStamp } from './writer-sequences.js';
import { sameStamp } from './writer-sequences.js';

export class OutsideEdits {
  /** The stamp of an outside file that could not be loaded: said once, and writes are refused. */
  private unreadable: { stamp: FileStamp; error: StoreError } | undefined;

  constructor(
    private readonly io: Io,
    private readonly file: string,
    private readonly log: StoreLog | undefined,
  ) {}

  /**
   * Why state.json, changed by another process, cannot be loaded now (the error every write is
   * refused with), or undefined.
   */
  get failure(): StoreError | undefined {
    return this.unreadable?.error;
  }

  /** The file is the store's again (its own, or none): writes are no longer refused. */
  clear(): void {
    this.setUnreadable(undefined);
  }

  /** The outside file that cannot be loaded (writes refused until it is fixed), reported to the health. */
  private setUnreadable(u: { stamp: FileStamp; error: StoreError } | undefined): void {
    if ((u === undefined) !== (this.unreadable === undefined)) this.log?.stateUnreadable(u !== undefined);
    this.unreadable = u;
  }

  /**
   * The document and stamp of state.json when it differs from `known` (what the store last read
   * or wrote), else undefined. Throws a StoreError when the file cannot be stat'ed, read, or is not
   * a valid state: nothing is changed, and it is logged once per version.
   */
  async read(known: FileStamp): Promise<{ doc: Doc; stamp: FileStamp } | undefined> {
    const base = path.basename(this.file);
    let now: FileStamp;
    try {
      now = stampOf(this.io, this.file);
    } catch (err) {
      throw ioError('stat', base, err);
    }
    // A removed file (or state dir) is not an edit to load: the next commit writes the document
    // back, as the Go daemon's next save would (Go's MkdirAll); nobody's words are lost.
    // Stryker disable next-line BooleanLiteral: "changed" with nothing changed re-applies the same pure mutations onto the same document: the same results, the same file
    if (now === null || sameStamp(now, known)) {
      // The unloadable file is gone (the next commit writes ours back) or replaced by ours.
      this.setUnreadable(undefined);
      return undefined;
    }
    if (this.unreadable && sameStamp(now, this.unreadable.stamp)) throw this.unreadable.error;
    let read: { doc: Doc; stamp: FileStamp };
    try {
      read = await readDocument(this.io, this.file);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      const error = new StoreError('io', `${base} was changed by another process and cannot be loaded (${why}); `
        + `it is left as it is and no write replaces it until it is fixed`, { code: 'EINVAL' }, 'EINVAL');
      this.setUnreadable({ stamp: now, error });
      this.log?.error(error.message);
      throw error;
    }
    this.setUnreadable(undefined);
    return read;
  }
}
