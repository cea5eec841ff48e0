// Which writes the store takes, and in what order they reach a name's files. State mutations are
// ordered by the state's commit queue (state-store.ts) and each file's appends by its own
// (append-file.ts); what is decided here is where an append or a removal of a name's files takes
// its place relative to the mutations of that name's session row, so the result is the one a
// client calling one at a time would see.
import type { StorageHealth } from './health.js';
import { assertPathComponent } from './paths.js';
import type { Doc } from './state-document.js';
import * as docs from './state-document.js';
import type { StateStore } from './state-store.js';
import { StoreError } from './store-error.js';
import type { StateDirWatch } from './state-gone.js';
import type { WriterKey } from './writer-sequences.js';

/** The guard every session-scoped mutation accepts: refuse unless the row is this lifetime. */
export interface Guard {
  incarnation?: string;
  /** The write's idempotency key: one already applied is answered as it was (writer-sequences.ts). */
  writer?: WriterKey | undefined;
}

/** What an append accepts beyond the guard. */
export interface AppendOptions extends Guard {
  /** false: Go's rule, the file is written for any valid name and no row is made (default true). */
  requireSession?: boolean;
}

/** Whether the document lets an append to `name` through: the guard's row, and a row at all unless not required. */
function checkAppend(d: Doc, name: string, opts: AppendOptions): void {
  // A guard speaks of a lifetime: its row being gone is a conflict (data.incarnation null).
  docs.checkIncarnation(d, name, opts.incarnation);
  if (opts.requireSession !== false && !docs.findSession(d, name)) {
    throw new StoreError('unknown-session', `no session named ${JSON.stringify(name)}`);
  }
}

export class WriteOrder {
  /** Set by shutdown and by close: writes are refused from then on. */
  private refused = false;
  /** Per name, the turn of the last write to its files still waiting for its session row (inTurn). */
  private readonly waiting = new Map<string, Promise<void>>();
  /**
   * Per name, its session/add and session/remove mutations not yet committed or refused, and
   * state/save's (which may add or remove any row): while one is, whether an append to the name
   * finds a row depends on how they end, so forAppend decides it at its place among them.
   */
  private readonly rowChanges = new Map<string, number>();
  private savesInFlight = 0;

  constructor(
    private readonly state: StateStore,
    private readonly health: StorageHealth,
    /** Turns a write's failure into the one that says the state dir is gone, when it is (state-gone.ts). */
    private readonly dirWatch?: StateDirWatch,
  ) {}

  /** Refuses every write from now on (shutdown, close); reads go on. */
  refuse(): void {
    this.refused = true;
  }

  assertOpen(): void {
    if (this.refused) throw new StoreError('closed', 'the server is shutting down; no more writes');
  }

  /** A state mutation, refused once writes are; async so a refusal rejects, and the body still enqueues synchronously. */
  async mutate<R>(apply: (d: Doc) => docs.Outcome<R>, opts: { writeIfMissing?: boolean; key?: WriterKey | undefined } = {}): Promise<R> {
    this.assertOpen();
    return this.noted(this.state.mutate(apply, opts));
  }

  /**
   * `write`, its failure said as the state dir being gone when it is (state-gone.ts); a refusal by
   * the file system (ENOSPC, EIO, EMFILE…) is also recorded in the storage health, so `status` is
   * unhealthy for a minute after any refused write, not only after the failures nobody else hears
   * of. The caller still gets the error; nothing is logged (the caller was told, and a full disk
   * would log once per append).
   */
  noted<T>(write: Promise<T>): Promise<T> {
    const watch = this.dirWatch;
    const out = watch ? write.catch((err: unknown) => { throw watch.explain(err); }) : write;
    out.catch((err: unknown) => {
      if (err instanceof StoreError && err.kind === 'io') this.health.recordError('a write was refused', err);
    });
    return out;
  }

  /** `change` (an add or removal of `name`'s row) counted in rowChanges until it is committed or refused. */
  changingRow<T>(name: string, change: Promise<T>): Promise<T> {
    this.rowChanges.set(name, (this.rowChanges.get(name) ?? 0) + 1);
    const done = (): void => {
      const n = (this.rowChanges.get(name) ?? 1) - 1;
      if (n === 0) this.rowChanges.delete(name);
      else this.rowChanges.set(name, n);
    };
    change.then(done, done);
    return change;
  }

  /** `save` (a state/save, which may add or remove any row) counted until it is committed or refused. */
  saving<T>(save: () => Promise<T>): Promise<T> {
    this.savesInFlight++;
    return save().finally(() => this.savesInFlight--);
  }

  /**
   * Runs `enqueue` once the session row allows it. When no add or removal of the row (nor a
   * state/save) is in flight, decided now, and `enqueue` is called synchronously, so appends
   * keep the order in which they were called (a pending patch of the row cannot change whether
   * it is there, nor its incarnation). Otherwise the check takes a place among the state's
   * mutations, so it is decided against the document as it stands at the append's place in the
   * order, as one call at a time would be: a row added but not yet committed is waited for (a
   * transcript never reaches the disk before its session does), and a removal that fails leaves
   * the append its row (decided against the pending document, a session/remove whose write
   * failed would refuse the append behind it while the row stayed). A mutation called later (a
   * `session/remove` pipelined behind) cannot refuse it; one called earlier that fails, or an
   * outside edit loaded before its turn, can. The checks include the name's, so `enqueue` may
   * use the name caches directly.
   */
  forAppend<T>(name: string, opts: AppendOptions, enqueue: () => Promise<T>): Promise<T> {
    const decidedNow = !this.rowChanges.has(name) && this.savesInFlight === 0;
    try {
      this.assertOpen();
      assertPathComponent(name);
      if (decidedNow) checkAppend(this.state.pendingDocument, name, opts);
    } catch (err) {
      return Promise.reject(err);
    }
    if (decidedNow) return this.inTurn(name, enqueue);
    // Changes nothing, so it writes nothing; it is applied again wherever the mutations before
    // it are (after a failed commit, onto an outside edit), and settles with their commit.
    const placed = this.state.mutate((d) => {
      checkAppend(d, name, opts);
      return { doc: d, result: undefined };
    });
    return this.inTurn(name, enqueue, () => placed);
  }

  /**
   * `enqueue` now, unless a write to the name's files still waits for its session row: then
   * behind that write's enqueue (after `wait`, if given), so a removal or append called later is
   * never queued before it.
   */
  inTurn<T>(name: string, enqueue: () => Promise<T>, wait?: () => Promise<unknown>): Promise<T> {
    const before = this.waiting.get(name);
    if (!before && !wait) return enqueue();
    const ready = wait ? (before ?? Promise.resolve()).then(wait) : (before ?? Promise.resolve());
    // Boxed, so the turn ends when `enqueue` was called, not when its write is done.
    const called = ready.then(() => ({ out: enqueue() }));
    const turn = called.then(() => undefined, () => undefined);
    this.waiting.set(name, turn);
    void turn.then(() => {
      if (this.waiting.get(name) === turn) this.waiting.delete(name);
    });
    return called.then((c) => c.out);
  }
}
