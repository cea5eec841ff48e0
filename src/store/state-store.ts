// state.json owned by one writer: mutations are applied in arrival order to a `head` document and
// persisted copy-on-write in group commits (mutations that arrive while a write runs share the next
// one). A reply waits for its commit; a failed write rejects its batch and leaves memory and disk
// as they were. Readers see only committed documents. A file changed by someone else (an edit by
// hand) is noticed by its size, mtime or inode before the next commit and on `refresh`
// (state-outside.ts), and loaded first: it is never overwritten unseen (docs/go-compatibility.md
// says what a racing writer gets).
import path from 'node:path';
import { RowCache } from './row-cache.js';
import { CommitQueue } from './commit-queue.js';
import type { Io, LineToAppend } from './io.js';
import type { Pending } from './state-batch.js';
import { applyAll, gatherMs } from './state-batch.js';
import type { Doc, Outcome } from './state-document.js';
import { backfill } from './session-ids.js';
import { emptyDocument } from './state-document.js';
import { describeStamp, readDocument, stampOf, writeDocument } from './state-file.js';
import { OutsideEdits } from './state-outside.js';
import { StoreError } from './store-error.js';
import type { StoreLog } from './store-log.js';
import { StateKeys } from './state-keys.js';
import type { FileStamp, KeyedAnswer, KeyEntries, WriterKey } from './writer-sequences.js';
import { sameStamp } from './writer-sequences.js';

/** What tells one state.json from another without reading it: null when there is none. */
type Stamp = FileStamp;

export type Durability = 'sync' | 'write';

/** Called after each commit with the documents before and after it, in commit order. */
export type CommitListener = (before: Doc, after: Doc) => void;

export class StateStore {
  private committed: Doc;
  private head: Doc;
  private readonly queue = new CommitQueue<Pending>({ commit: (batch) => this.commit(batch), gatherMs });
  private readonly listeners = new Set<CommitListener>();
  /** Encoded rows, so a commit re-encodes only the rows its mutations replaced. */
  private readonly rows = new RowCache();

  /** The file as this store last read or wrote it. */
  private stamp: Stamp;
  /** Edits by another process, and the one that could not be loaded (writes are refused meanwhile). */
  private readonly outside: OutsideEdits;
  private refreshing: Promise<void> | undefined;

  private readonly io: Io;
  private readonly file: string;
  private readonly durability: Durability;
  private readonly log: StoreLog | undefined;
  /** The idempotency keys of the document's writes, when the store keeps them. */
  private readonly writers: StateKeys | undefined;

  private constructor(
    { io, file, durability, log, writers }: { io: Io; file: string; durability: Durability; log: StoreLog | undefined; writers: StateKeys | undefined },
    doc: Doc,
    stamp: Stamp,
  ) {
    this.io = io;
    this.file = file;
    this.durability = durability;
    this.log = log;
    this.writers = writers;
    this.committed = doc;
    this.head = doc;
    this.stamp = stamp;
    this.outside = new OutsideEdits(io, file, log);
  }

  /**
   * Loads state.json as Go's LoadState: a missing file is an empty state; an empty or invalid
   * one is an error naming the file and leaves it untouched; ids are backfilled in memory and
   * incarnations backfilled and persisted at once.
   */
  static async load(
    io: Io, file: string, durability: Durability, log?: StoreLog,
    /** The side folder, where the keys of the document's writes are kept (state-keys.ts); none kept without it. */
    side?: string,
    /** What the open just made, so holds nothing to read: the state dir (no state.json), the side folder (no keys). */
    fresh: { dir?: boolean; side?: boolean } = {},
  ): Promise<StateStore> {
    const { doc, stamp } = fresh.dir ? { doc: emptyDocument(), stamp: null } : await readDocument(io, file);
    // Before anything is written: the keys are judged against the file as the crash left it.
    const writers = side === undefined ? undefined : await StateKeys.load(io, side, stamp, durability === 'sync', fresh.side);
    const filled = backfill(doc);
    const store = new StateStore({ io, file, durability, log, writers }, filled.doc, stamp);
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

  /**
   * Loads state.json first if someone else changed it since this store last read or wrote it.
   * While a commit is under way nothing is done: the commit looks before it writes. An outside
   * file that cannot be loaded is logged (once) and the last document kept; writes are refused
   * until it is fixed.
   */
  async refresh(): Promise<void> {
    if (!this.queue.idle) return;
    // The common case, nothing changed, costs one lstat on this thread and no turn of the queue.
    // Stryker disable next-line BlockStatement: without this look the queue's own finds the same with the same one lstat; only a turn of the queue is saved
    try {
      const now = stampOf(this.io, this.file);
      if (now === null || sameStamp(now, this.stamp)) {
        this.outside.clear(); // an unloadable file removed since: the next commit writes ours
        return;
      }
    } catch {
      // A stat that fails is left to the look inside the queue, which reports it.
    }
    this.refreshing ??= this.queue
      .exclusive(async () => {
        try {
          if (await this.noticeOutside()) this.replayOnto(this.committed, this.queue.waiting());
        } catch (err) {
          if (!(err instanceof StoreError)) throw err;
          // An unloadable file was logged when it was found; anything else (the incarnations it
          // lacked could not be written) is said here, and tried again at the next look.
          if (err !== this.outside.failure) this.log?.error(`loading ${path.basename(this.file)}, changed by another process, failed`, err);
        }
      })
      .finally(() => (this.refreshing = undefined));
    await this.refreshing;
  }

  /** The last committed document: what is in the file. */
  get document(): Doc {
    return this.committed;
  }

  /**
   * Why state.json, changed by another process, cannot be loaded now (the error every write is
   * refused with), or undefined: the committed document is then what the file holds.
   */
  get loadFailure(): StoreError | undefined {
    return this.outside.failure;
  }

  /** The document with every accepted mutation applied, committed or not (for existence checks). */
  get pendingDocument(): Doc {
    return this.head;
  }

  /** The keys of the document's writes applied so far (a backup's copy); none when the store keeps none. */
  writerKeys(): KeyEntries {
    return this.writers?.keys.entries() ?? [];
  }

  onCommit(listener: CommitListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Applies `apply` after every mutation accepted before it and resolves once the result is in
   * the file. A mutation that changes nothing, with nothing pending, answers at once and writes
   * nothing, unless `writeIfMissing` and there is no file (Go's Save writes the file whatever
   * changed). `apply` must be pure: it may throw to refuse, which changes nothing. A refusal is
   * answered at once only when nothing is queued; else it takes its place in the queue and is
   * decided again if a mutation before it fails (refused against the head, a session/add behind
   * one whose write failed was answered "exists", where one at a time it was added).
   */
  mutate<R>(apply: (doc: Doc) => Outcome<R>, opts: { writeIfMissing?: boolean; key?: WriterKey | undefined } = {}): Promise<R> {
    const { key } = opts;
    if (key === undefined || this.writers === undefined) return this.mutateOnce(apply, opts);
    const { keys } = this.writers;
    const answered = keys.answered(key);
    if (answered) return Promise.resolve(answered.answer as R);
    return (keys.pending(key) as Promise<R> | undefined) ?? keys.track(key, this.mutateOnce(apply, opts));
  }

  /**
   * The answer of the write with `key` when it was already applied (in the file, or accepted and
   * waited for here), else undefined: a write sent again is answered as the first was.
   */
  async priorAnswer(key: WriterKey | undefined): Promise<{ answer: unknown } | undefined> {
    if (key === undefined || this.writers === undefined) return undefined;
    const pending = this.writers.keys.pending(key);
    if (pending) return { answer: await pending };
    return this.writers.keys.answered(key);
  }

  private mutateOnce<R>(apply: (doc: Doc) => Outcome<R>, { writeIfMissing = false, key }: { writeIfMissing?: boolean; key?: WriterKey | undefined }): Promise<R> {
    let out: Outcome<R>;
    try {
      out = apply(this.head);
    } catch (err) {
      if (this.queue.idle) return Promise.reject(err);
      const refused: Pending = { apply, result: undefined, changed: false, refused: err };
      return this.queue.push(refused).then(() => refused.result as R);
    }
    const changed = out.doc !== this.head;
    if (!changed && this.queue.idle && !(writeIfMissing && this.missing())) return Promise.resolve(out.result);
    const p: Pending = { apply, result: out.result, changed, writeIfMissing, key };
    this.head = out.doc;
    return this.queue.push(p).then(() => p.result as R);
  }

  /** Resolves when every mutation accepted so far has been committed or refused. */
  settled(): Promise<void> {
    return this.queue.settled();
  }

  /** Whether there is no file at the name now (a stat that fails counts as a file: the commit's look reports it). */
  private missing(): boolean {
    try {
      return stampOf(this.io, this.file) === null;
    } catch {
      return false;
    }
  }

  /** One group commit: the document with every mutation of the batch applied, written once. */
  private async commit(batch: Pending[]): Promise<unknown[]> {
    // The queue hands over every waiting mutation at once: `head` is exactly this batch applied.
    let snapshot = this.head;
    try {
      const write = (): boolean => batch.some((p) => p.changed) || (batch.some((p) => p.writeIfMissing) && this.missing());
      if (write()) {
        if (await this.noticeOutside()) {
          // The file changed under us and is now the committed document: the batch is applied
          // onto it (a mutation it makes impossible is refused), then the ones that came since.
          this.replayOnto(this.committed, batch);
          snapshot = this.head;
          this.head = applyAll(this.head, this.queue.waiting());
        }
        if (write()) await this.persistWithKeys(snapshot, batch);
      }
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
    this.head = applyAll(base, waiting);
  }

  /** Closes the keys' log (after `settled`: no commit under way). */
  close(): Promise<void> {
    return this.writers?.close() ?? Promise.resolve();
  }

  /** Writes `doc`, after the keys its batch applies (state-keys.ts: durable with it, in the same hand-off). */
  private async persistWithKeys(doc: Doc, batch: Pending[]): Promise<void> {
    const keyed: KeyedAnswer[] = [];
    for (const p of batch) if (p.key && p.changed && p.refused === undefined) keyed.push({ key: p.key, answer: p.result });
    const writers = keyed.length > 0 || this.writers?.needsWrite ? this.writers : undefined;
    const line = await writers?.prepare(keyed, this.stamp);
    await this.persist(doc, line && writers && { line, keys: writers });
    writers?.committed(keyed, line);
  }

  /** Writes `doc`; with `first`, after appending its keys' line (a line that fails replaces nothing). */
  private async persist(doc: Doc, first?: { line: LineToAppend; keys: StateKeys }): Promise<void> {
    this.stamp = await writeDocument(this.io, this.file, doc, this.rows, this.durability === 'sync', first);
  }

  /**
   * Whether state.json differs (size, mtime or inode) from what this store last read or wrote;
   * if so it is loaded as the committed document (Go's LoadState: backfills, incarnations
   * persisted), the change is logged at warn and reported to the commit listeners. Runs only
   * inside the queue (a commit, or refresh's exclusive task). Throws a StoreError when the file
   * cannot be read or is not a valid state: nothing is changed, and it is logged once per version.
   */
  private async noticeOutside(): Promise<boolean> {
    const read = await this.outside.read(this.stamp);
    if (!read) return false;
    const filled = backfill(read.doc);
    const before = this.committed;
    const was = this.stamp;
    // As Go's LoadState, incarnations it lacked are written at once; if that fails, the stamp
    // stays the old one, so the next look loads the file again.
    if (filled.persist) await this.persist(filled.doc);
    else this.stamp = read.stamp;
    this.committed = filled.doc;
    this.head = filled.doc;
    this.log?.warn(`${path.basename(this.file)} was changed by another process (now ${describeStamp(read.stamp)}; was ${describeStamp(was)}); `
      + 'loaded it: later reads and writes start from it');
    for (const l of this.listeners) l(before, filled.doc);
    return true;
  }
}
