// state.json owned by one writer: mutations are applied in arrival order to a `head` document and
// persisted copy-on-write in group commits (mutations that arrive while a write runs share the next
// one). A reply waits for its commit; a failed write rejects its batch and leaves memory and disk
// as they were. Readers see only committed documents.
import path from 'node:path';
import { DecodeError, decodeStateText } from './go-decode.js';
import { encodeStateDocumentBytes, RowCache, UnsupportedValueError } from './go-json.js';
import { CommitQueue } from './commit-queue.js';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import type { Doc, Outcome } from './state-document.js';
import { backfill, emptyDocument, fromDecoded } from './state-document.js';
import { ioError, StoreError } from './store-error.js';

export type Durability = 'sync' | 'write';

/** Commits shorter than this never wait for more callers: a timer's 1 ms grain is half of it. */
const GATHER_FROM_MS = 2;
const GATHER_MAX_MS = 10;

/**
 * How long the next commit may wait for the callers the last one answered: as long as that
 * commit took. A caller that comes back just after a commit started waits for all of it before
 * its own, so waiting up to one commit for it makes it no later, and those already waiting at
 * most one commit later. A rewrite of a big state.json (1.8 MB at 5 000 sessions: ~4 ms, mostly
 * its fdatasync) then answers all of them at once instead of every other one
 * (docs/performance.md, "Mutations at 5 000 sessions").
 */
function gatherMs(lastCommitMs: number): number {
  return lastCommitMs < GATHER_FROM_MS ? 0 : Math.min(GATHER_MAX_MS, lastCommitMs);
}

interface Pending {
  readonly apply: (doc: Doc) => Outcome<unknown>;
  result: unknown;
  changed: boolean;
  /** Set when re-applying after a failed write refused this mutation: it fails with its batch. */
  refused?: unknown;
}

/** Called after each commit with the documents before and after it, in commit order. */
export type CommitListener = (before: Doc, after: Doc) => void;

export class StateStore {
  private committed: Doc;
  private head: Doc;
  private readonly queue = new CommitQueue<Pending>({ commit: (batch) => this.commit(batch), gatherMs });
  private readonly listeners = new Set<CommitListener>();
  /** Encoded rows, so a commit re-encodes only the rows its mutations replaced. */
  private readonly rows = new RowCache();

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
      if (!isErrno(err, 'ENOENT')) throw ioError('read', path.basename(file), err);
    }
    let doc = emptyDocument();
    if (text !== undefined) {
      try {
        doc = fromDecoded(decodeStateText(text, path.basename(file)));
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
    if (!changed && this.queue.idle) return Promise.resolve(out.result);
    const p: Pending = { apply, result: out.result, changed };
    this.head = out.doc;
    return this.queue.push(p).then(() => p.result as R);
  }

  /** Resolves when every mutation accepted so far has been committed or refused. */
  settled(): Promise<void> {
    return this.queue.settled();
  }

  /** One group commit: the document with every mutation of the batch applied, written once. */
  private async commit(batch: Pending[]): Promise<unknown[]> {
    // The queue hands over every waiting mutation at once: `head` is exactly this batch applied.
    const snapshot = this.head;
    try {
      if (batch.some((p) => p.changed)) await this.persist(snapshot);
    } catch (err) {
      // Nothing of this batch is in the file: the mutations queued behind it are re-applied onto
      // the committed document, as if the failed ones had never been accepted.
      this.replayOnto(this.committed, this.queue.waiting());
      throw err;
    }
    const before = this.committed;
    this.committed = snapshot;
    if (before !== snapshot) for (const l of this.listeners) l(before, snapshot);
    return batch.map((p) => p.refused);
  }

  /** After a failed write: re-applies the still-queued mutations onto the committed document. */
  private replayOnto(base: Doc, waiting: Pending[]): void {
    this.head = base;
    for (const p of waiting) {
      if (p.refused !== undefined) continue;
      try {
        const out = p.apply(this.head);
        p.result = out.result;
        p.changed = out.doc !== this.head;
        this.head = out.doc;
      } catch (err) {
        p.refused = err;
        p.changed = false;
      }
    }
  }

  private async persist(doc: Doc): Promise<void> {
    const text = encodeDocument(doc, this.rows);
    const sync = this.durability === 'sync';
    const dir = path.dirname(this.file);
    try {
      try {
        await this.io.writeAtomic(this.file, text, { mode: 0o600, sync });
      } catch (err) {
        // The dir was removed under us: made again, as Go's SaveState (MkdirAll) would. Only
        // then, so a commit does not pay a call for a folder that is nearly always there.
        if (!isErrno(err, 'ENOENT')) throw err;
        await this.io.mkdir(dir, 0o700);
        await this.io.writeAtomic(this.file, text, { mode: 0o600, sync });
      }
      if (sync) await this.io.syncDir(dir);
    } catch (err) {
      throw ioError('write', path.basename(this.file), err);
    }
  }
}

/** state.json's text, or an invalid-input StoreError for a value Go's Marshal would refuse. */
function encodeDocument(doc: Doc, rows: RowCache): Buffer {
  try {
    return encodeStateDocumentBytes(doc, rows);
  } catch (err) {
    if (err instanceof UnsupportedValueError) throw new StoreError('invalid-input', err.message);
    throw err;
  }
}
