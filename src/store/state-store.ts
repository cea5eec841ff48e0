// state.json owned by one writer: mutations are applied in arrival order to a `head` document and
// persisted copy-on-write in group commits (mutations that arrive while a write runs share the next
// one). A reply waits for its commit; a failed write rejects its batch and leaves memory and disk
// as they were. Readers see only committed documents.
import path from 'node:path';
import { DecodeError, decodeStateText } from './go-decode.js';
import { encodeStateDocument, UnsupportedValueError } from './go-json.js';
import type { Io } from './io.js';
import type { Doc, Outcome } from './state-document.js';
import { backfill, emptyDocument, fromDecoded } from './state-document.js';
import { ioError, StoreError } from './store-error.js';

export type Durability = 'sync' | 'write';

interface Pending {
  readonly apply: (doc: Doc) => Outcome<unknown>;
  result: unknown;
  changed: boolean;
  resolve(result: unknown): void;
  reject(err: unknown): void;
}

/** Called after each commit with the documents before and after it, in commit order. */
export type CommitListener = (before: Doc, after: Doc) => void;

const STATE_REL = 'state.json';

export class StateStore {
  private committed: Doc;
  private head: Doc;
  private queue: Pending[] = [];
  private writing: Promise<void> | undefined;
  private readonly listeners = new Set<CommitListener>();

  private constructor(
    private readonly io: Io,
    private readonly file: string,
    private readonly durability: Durability,
    doc: Doc,
  ) {
    this.committed = doc;
    this.head = doc;
  }

  /**
   * Loads state.json as Go's LoadState: a missing file is an empty state; an empty or invalid
   * one is an error naming the file and leaves it untouched; ids are backfilled in memory and
   * incarnations backfilled and persisted at once.
   */
  static async load(io: Io, file: string, durability: Durability): Promise<StateStore> {
    let text: string | undefined;
    try {
      text = (await io.readFile(file)).toString('utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError('read', STATE_REL, err);
    }
    let doc = emptyDocument();
    if (text !== undefined) {
      try {
        doc = fromDecoded(decodeStateText(text, STATE_REL));
      } catch (err) {
        if (err instanceof DecodeError) throw new StoreError('invalid-input', err.message);
        throw err;
      }
    }
    const filled = backfill(doc);
    const store = new StateStore(io, file, durability, filled.doc);
    if (filled.persist) {
      try {
        await store.persist(filled.doc);
      } catch (err) {
        throw new StoreError('io', `persist session incarnation backfill: ${(err as Error).message}`,
          (err as StoreError).data, (err as StoreError).code);
      }
    }
    return store;
  }

  /** The last committed document: what is in the file. */
  get document(): Doc {
    return this.committed;
  }

  /** The document with every accepted mutation applied, committed or not (for existence checks). */
  get pendingDocument(): Doc {
    return this.head;
  }

  onCommit(listener: CommitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Applies `apply` after every mutation accepted before it and resolves once the result is in
   * the file. A mutation that changes nothing, with nothing pending, answers at once and writes
   * nothing. `apply` must be pure: it may throw to refuse, which changes nothing.
   */
  mutate<R>(apply: (doc: Doc) => Outcome<R>): Promise<R> {
    let out: Outcome<R>;
    try {
      out = apply(this.head);
    } catch (err) {
      return Promise.reject(err);
    }
    const changed = out.doc !== this.head;
    if (!changed && this.queue.length === 0 && !this.writing) return Promise.resolve(out.result);
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ apply, result: out.result, changed, resolve: resolve as (r: unknown) => void, reject });
      this.head = out.doc;
      this.writing ??= this.drain();
    });
  }

  /** Resolves when every mutation accepted so far has been committed or refused. */
  async settled(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0);
        const snapshot = this.head;
        try {
          if (batch.some((p) => p.changed)) await this.persist(snapshot);
        } catch (err) {
          for (const p of batch) p.reject(err);
          this.replayOnto(this.committed);
          continue;
        }
        const before = this.committed;
        this.committed = snapshot;
        for (const p of batch) p.resolve(p.result);
        if (before !== snapshot) for (const l of this.listeners) l(before, snapshot);
      }
    } finally {
      this.writing = undefined;
    }
  }

  /** After a failed write: re-applies the still-queued mutations onto the committed document. */
  private replayOnto(base: Doc): void {
    this.head = base;
    const keep: Pending[] = [];
    for (const p of this.queue) {
      try {
        const out = p.apply(this.head);
        p.result = out.result;
        p.changed = out.doc !== this.head;
        this.head = out.doc;
        keep.push(p);
      } catch (err) {
        p.reject(err);
      }
    }
    this.queue = keep;
  }

  private async persist(doc: Doc): Promise<void> {
    const text = encodeDocument(doc);
    const sync = this.durability === 'sync';
    const dir = path.dirname(this.file);
    try {
      await this.io.mkdir(dir, 0o700);
      await this.io.writeAtomic(this.file, text, { mode: 0o600, sync });
      if (sync) await this.io.syncDir(dir);
    } catch (err) {
      throw ioError('write', STATE_REL, err);
    }
  }
}

/** state.json's text, or an invalid-input StoreError for a value Go's Marshal would refuse. */
function encodeDocument(doc: Doc): string {
  try {
    return encodeStateDocument(doc);
  } catch (err) {
    if (err instanceof UnsupportedValueError) throw new StoreError('invalid-input', err.message);
    throw err;
  }
}
