// The store: one state dir owned by one process. Every operation of Herrscher's Go state package as a
// method, with Go's results except the Go defects we fix (docs/go-compatibility.md). Knows nothing of RPC.
import { randomUUID } from 'node:crypto';
import { rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { GoInteger, HomeRef, NewSession, Session } from '../protocol/model.js';
import { INSTANCE_ID_PATTERN } from '../protocol/model.js';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import { nodeIo } from './io.js';
import { StorageHealth } from './health.js';
import { HighWater, highWaterRelIn } from './high-water.js';
import type { HeldLock } from './lock.js';
import { adoptLock, loadFlockBinding, lockServer, lockStateFile } from './lock.js';
import { cachedNamesForFdLimit, NameCache } from './name-cache.js';
import { Participants } from './participants.js';
import type { StatePaths } from './paths.js';
import { assertPathComponent, assertSessionName, isPathComponent, participantsRel, statePaths, transcriptRel } from './paths.js';
import type { Defaults, Doc } from './state-document.js';
import * as docs from './state-document.js';
import type { Durability } from './state-store.js';
import { StateStore } from './state-store.js';
import { assertPrivateDir, confine } from './state-dir.js';
import { StoreError } from './store-error.js';
import type { StoreLog } from './store-log.js';
import { storeLog } from './store-log.js';
import { sweepTempFiles } from './sweep.js';
import type { ForwardCursor, ForwardPage, Page, SeqMark } from './transcript.js';
import { Transcript } from './transcript.js';
import { metaRel } from './transcript-meta.js';
import type { Entry } from './transcript-read.js';
import type { Usage } from './usage.js';
import { replayWal, walRelIn, WriteAheadLog } from './wal.js';
import { adoptSharedSideFiles } from './side-files.js';
import type { WriterKey } from './writer-sequences.js';
import { WRITERS_FILE } from './writer-sequences.js';
import { APPEND_KEYS_FILE, AppendKeys } from './append-keys.js';
import type { BackupSource } from './backup.js';
import { zeroUsage } from './usage.js';

export interface StoreOptions {
  /** `sync` (default): a write resolves once it is on disk. `write`: once write(2) returned, as Go. */
  durability?: Durability;
  /** Take the state file's flock (default true). */
  lock?: boolean;
  /** Adopt the flock a host holds through this descriptor instead of taking it (`serve --lock-fd`). */
  lockFd?: number;
  /** The file-system seam (tests inject failures through it). */
  io?: Io;
  /** Where the store reports what it tolerated and repaired (a torn tail cut, a replay). */
  warn?: (message: string, err?: unknown) => void;
  /** Where the store reports what went wrong with no caller to tell (default: `warn`). */
  error?: (message: string, err?: unknown) => void;
  /**
   * The storage health `status` reports (default: a new one, as `store.health`): fed with every
   * such error and each checkpoint's outcome.
   */
  health?: StorageHealth;
  /**
   * Names whose Transcript and Participants objects are kept while idle (default
   * DEFAULT_CACHED_NAMES each kind, fewer under a low limit on open files:
   * cachedNamesForFdLimit); more only while calls on them are in flight.
   */
  cachedNames?: number;
  /** Size past which the write-ahead log is checkpointed (default 16 MiB; tests go lower). */
  walCheckpointBytes?: number;
}

/** What the store reports once a change is in the file, in commit order (the change feed). */
export interface StoreEvents {
  /** A state.json commit; `revision` counts commits since the store opened. */
  stateCommitted(revision: number, before: Doc, after: Doc): void;
  transcriptAppended(name: string, seq: number, entry: Entry): void;
  participantAdded(name: string, userId: string): void;
}

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

/** What Store.open has opened and checked, handed to the store it returns. */
interface StoreParts {
  statePath: string;
  dir: string;
  /** This state file's side folder, relative to dir (paths.ts, sideOf). */
  side: string;
  state: StateStore;
  io: Io;
  durability: Durability;
  lock: HeldLock | undefined;
  log: StoreLog;
  wal: WriteAheadLog | undefined;
  marks: HighWater;
  appendKeys: AppendKeys;
  health: StorageHealth;
  /** How many idle names keep their Transcript and Participants objects. */
  cachedNames: number;
}

type SessionPatch = Partial<Pick<Session, 'resumeToken' | 'paused_reason' | 'archived' | 'vendor' | 'cmd' | 'modelId'
  | 'cost_cap' | 'token_cap' | 'cohort_cost_cap' | 'cohort_token_cap'>>;

export class Store {
  private readonly transcripts: NameCache<Transcript>;
  private readonly journals: NameCache<Participants>;
  private defaults: Defaults = {};
  /** Set by shutdown (refuseWrites) and by close: writes are refused from then on. */
  private writesRefused = false;
  private closing: Promise<void> | undefined;
  private readonly listeners = new Set<Partial<StoreEvents>>();
  /** Per name, the turn of the last write to its files still waiting for its session row (inTurn). */
  private readonly waiting = new Map<string, Promise<void>>();
  /**
   * Per name, its session/add and session/remove mutations not yet committed or refused, and
   * state/save's (which may add or remove any row): while one is, whether an append to the name
   * finds a row depends on how they end, so forAppend decides it at its place among them.
   */
  private readonly rowChanges = new Map<string, number>();
  private savesInFlight = 0;
  private revisionCount = 0;
  /** This run of the store: revisions count from 0 again in the next one, so one is comparable only with its epoch. */
  readonly epoch: string = randomUUID();

  readonly statePath: string;
  readonly dir: string;
  readonly durability: Durability;
  /** Storage health for `status`: fed by every error the store logs and by checkpoints. */
  readonly health: StorageHealth;
  private readonly state: StateStore;
  private readonly io: Io;
  private readonly lock: HeldLock | undefined;
  private readonly log: StoreLog;
  private readonly wal: WriteAheadLog | undefined;
  private readonly marks: HighWater;
  /** The idempotency keys of transcript appends (append-keys.ts). */
  private readonly appendKeys: AppendKeys;
  /** This state file's side folder, relative to dir (paths.ts, sideOf). */
  private readonly side: string;

  private constructor(parts: StoreParts) {
    this.statePath = parts.statePath;
    this.dir = parts.dir;
    this.durability = parts.durability;
    this.health = parts.health;
    this.state = parts.state;
    this.io = parts.io;
    this.lock = parts.lock;
    this.log = parts.log;
    this.wal = parts.wal;
    this.marks = parts.marks;
    this.appendKeys = parts.appendKeys;
    this.side = parts.side;
    const { state, log, cachedNames } = parts;
    const hasRow = (name: string): boolean => docs.findSession(this.state.pendingDocument, name) !== undefined;
    const onError = (message: string, err?: unknown): void => log.error(message, err);
    this.transcripts = new NameCache(cachedNames, (name) => this.newTranscript(name), hasRow, onError);
    this.journals = new NameCache(cachedNames, (name) => this.newJournal(name), hasRow, onError);
    state.onCommit((before, after) => {
      this.revisionCount++;
      for (const l of this.listeners) l.stateCommitted?.(this.revisionCount, before, after);
    });
  }

  /** Bytes in the write-ahead log not yet checkpointed (0 with durability `write`, which has none). */
  get walBytes(): number {
    return this.wal?.bytes ?? 0;
  }

  /** Names with a cached Transcript and Participants object now (the bound in docs/limits.md). */
  get cachedNames(): { transcripts: number; journals: number } {
    return { transcripts: this.transcripts.size, journals: this.journals.size };
  }

  /** Increases with every committed state change (the change feed's `revision`). */
  get revision(): number {
    return this.revisionCount;
  }

  /** What a backup fixes of this store (backup.ts): call it while no write is in flight. */
  backupSource(): BackupSource {
    return { dir: this.dir, statePath: this.statePath, side: this.side, revision: this.revisionCount, epoch: this.epoch, marks: new Map(this.marks.entries()) };
  }

  /** Registers listeners for committed changes; returns the function that removes them. */
  watch(listener: Partial<StoreEvents>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Locks, sweeps temp files a crash left, and loads state.json (see StateStore.load). */
  static async open(statePath: string, options: StoreOptions = {}): Promise<Store> {
    const given = statePaths(statePath);
    const baseIo = options.io ?? nodeIo;
    const durability = options.durability ?? 'sync';
    if (options.lock !== false) loadFlockBinding(); // before anything is made on disk
    await baseIo.mkdir(given.dir, 0o700);
    // The dir itself may be reached through a link (a configured path); nothing inside it is.
    const dir = await baseIo.realpath(given.dir);
    await assertPrivateDir(baseIo, dir);
    const paths = statePaths(path.join(dir, path.basename(given.statePath)));
    const io = confine(baseIo, dir);
    const lock = options.lock === false ? undefined
      : options.lockFd !== undefined ? adoptLock(options.lockFd, paths.lockPath, paths.statePath)
      : lockStateFile(paths.lockPath, paths.statePath);
    const health = options.health ?? new StorageHealth();
    const log = storeLog({ warn: options.warn, error: options.error, health });
    let wal: WriteAheadLog | undefined;
    let serverLock: HeldLock | undefined;
    // Folders this start creates: a start that fails removes them again (a refused start changes nothing).
    const created = await missingFolders(io, paths.dir, paths.side);
    try {
      await io.mkdir(path.join(paths.dir, paths.side), 0o700);
      if (lock) serverLock = lockServer(paths.serverLockPath, paths.statePath, options.lockFd);
      await sweepTempFiles(io, paths.dir, path.basename(paths.statePath), log, paths.side);
      // Before anything reads a transcript: put back what a crash kept from the files.
      const marks = await HighWater.load(io, paths.dir, log, highWaterRelIn(paths.side));
      await adoptSharedSideFiles(io, paths.dir, paths.side, { marks, nameOf: nameOfTranscript, log });
      await replayWal(io, paths.dir, log, async (seqs) => {
        for (const [rel, next] of seqs) marks.raise(nameOfTranscript(rel), next);
        await marks.save();
      }, { rel: walRelIn(paths.side) });
      // After the replay: a key counts only if its append's bytes are in the file.
      const appendKeys = await AppendKeys.load(io, paths.dir, path.join(paths.dir, paths.side, APPEND_KEYS_FILE));
      const state = await StateStore.load(io, paths.statePath, durability, log, path.join(paths.dir, paths.side, WRITERS_FILE));
      const id = state.document.instanceID ?? '';
      if (id !== '' && !INSTANCE_ID_PATTERN.test(id)) {
        // Written by another writer (Go checks nothing): served all the same, on the socket without it.
        log.warn(`state.json's instanceID ${JSON.stringify(id.slice(0, 40))} cannot name a socket (1-32 letters, digits, "_", "." or "-"); `
          + 'the default socket without an instance id is served instead');
      }
      if (durability === 'sync') {
        wal = await WriteAheadLog.open(io, paths.dir, {
          syncFile: (rel) => syncByName(io, paths.dir, rel), log, beforeEmpty: () => marks.save(),
          checkpointBytes: options.walCheckpointBytes, rel: walRelIn(paths.side),
        });
      }
      return new Store({
        statePath: paths.statePath, dir: paths.dir, side: paths.side, state, io, durability, lock: bothLocks(serverLock, lock), log, wal,
        marks, appendKeys, health, cachedNames: options.cachedNames ?? cachedNamesForFdLimit(),
      });
    } catch (err) {
      serverLock?.release();
      await removeIfCreated(io, paths, created);
      lock?.release();
      throw err;
    }
  }

  /**
   * Finishes every queued write, then refuses new ones, checkpoints the write-ahead log and
   * releases the lock. Also after a shutdown, which only refused writes.
   */
  close(): Promise<void> {
    this.writesRefused = true;
    this.closing ??= (async () => {
      await this.flush();
      await Promise.all([this.transcripts.close(), this.journals.close()]);
      await this.appendKeys.close();
      // Every file synced and the log emptied: a clean stop leaves nothing to replay (a failure is logged).
      await this.wal?.close();
      try {
        await this.marks.save();
      } catch (err) {
        this.log.error('the seq high-water marks could not be written at close', err);
      }
      this.lock?.release();
    })();
    return this.closing;
  }

  /** Resolves when every write accepted so far is done (shutdown drains with it). */
  async flush(): Promise<void> {
    await this.state.settled();
    await Promise.all([this.transcripts.settled(), this.journals.settled()]);
    await this.wal?.settled();
  }

  /** Stops accepting writes (shutdown), keeping reads. */
  refuseWrites(): void {
    this.writesRefused = true;
  }

  // ---- state document -------------------------------------------------------------------

  /** The committed document with config defaults overlaid (never persisted, unlike Go). */
  getState(): Doc {
    return docs.withDefaults(this.state.document, this.defaults);
  }

  /**
   * Loads state.json first if another process changed it (size, mtime or inode) since the store
   * last read or wrote it: the server calls it before it answers a read of the document. Writes
   * look by themselves, right before they write. Never rejects: a file that cannot be loaded is
   * logged and the last document kept (writes are then refused until it is fixed).
   */
  refresh(): Promise<void> {
    return this.closing ? Promise.resolve() : this.state.refresh();
  }

  /**
   * The committed document exactly as state.json holds it, without the defaults overlay. Throws
   * the load's error while the file, changed by another process, cannot be loaded: the last good
   * document is not what the file holds then, and a caller loading the state (Go's LoadState)
   * must hear why, as Go's would.
   */
  getPersistedState(): Doc {
    const failure = this.state.loadFailure;
    if (failure) throw failure;
    return this.state.document;
  }

  /**
   * Go's Save of a whole in-memory document (docs.replaceDocument), if the state is still at
   * `revision`; else a conflict carrying the current one. Compared once no other state mutation
   * is in flight: one accepted but not yet committed would give the state a revision the caller
   * has not seen. Resolves with the save's own revision (unchanged when nothing changed). When
   * there is no file, it is written even if nothing changed, as Go's Save writes it.
   */
  async saveState(doc: Doc, revision: number, epoch?: string, writer?: WriterKey): Promise<{ revision: number; changed: boolean }> {
    this.assertOpen();
    // Sent again once applied: answered as it was, before the revision (its own commit moved it) is compared.
    const prior = await this.state.priorAnswer(writer);
    if (prior) return { revision: this.revisionCount, changed: (prior.answer as { changed: boolean }).changed };
    // A file changed by hand since the caller read it is a newer revision: the save is refused.
    await this.state.refresh();
    while (this.state.pendingDocument !== this.state.document) {
      await this.state.settled();
      this.assertOpen();
    }
    const base = this.state.document;
    const stale = (): StoreError => new StoreError('conflict',
      epoch !== undefined && epoch !== this.epoch
        ? `revision ${revision} belongs to another run of the server (epoch ${epoch}, now ${this.epoch}); read it again (state/get) and save on top of it`
        : `the state is at revision ${this.revisionCount}, not ${revision}; read it again (state/get) and save on top of it`,
      { revision: this.revisionCount });
    // A revision of an earlier run can equal one of this run: only the epoch tells them apart.
    if (revision !== this.revisionCount || (epoch !== undefined && epoch !== this.epoch)) throw stale();
    this.savesInFlight++;
    const { changed } = await this.mutate((d) => {
      // Re-applied onto another document only after a failed write before it: no longer the same base.
      if (d !== base) throw stale();
      // A new instance id is held to setInstanceID's rule; one the file already holds is kept as it is.
      const id = doc.instanceID ?? '';
      if (id !== (d.instanceID ?? '') && id !== '' && !INSTANCE_ID_PATTERN.test(id)) {
        throw new StoreError('invalid-input', `instanceID ${JSON.stringify(id.slice(0, 40))} must be 1-32 letters, digits, "_", "." or "-", `
          + 'starting with a letter or digit: it names the default socket of every later start');
      }
      return docs.replaceDocument(d, doc);
      // As Go's Save, a save writes the file even when nothing changed if there is none (NewState + Save).
    }, { writeIfMissing: true, key: writer }).finally(() => this.savesInFlight--);
    return { revision: this.revisionCount, changed };
  }

  /** Go's ApplyDefaults as a read-time overlay: fills only what the file leaves empty. */
  applyDefaults(d: Defaults): Doc {
    this.defaults = docs.mergeDefaults(this.defaults, d);
    return this.getState();
  }

  setHome(home: HomeRef): Promise<{ changed: boolean }> {
    return this.mutate((d) => docs.setHome(d, home));
  }

  setWorkspace(workspace: string): Promise<{ changed: boolean }> {
    return this.mutate((d) => docs.setTopField(d, 'workspace', workspace));
  }

  setSource(source: string): Promise<{ changed: boolean }> {
    return this.mutate((d) => docs.setTopField(d, 'source', source));
  }

  setStatusMessageID(id: string): Promise<{ changed: boolean }> {
    return this.mutate((d) => docs.setTopField(d, 'statusMessageID', id));
  }

  /** Refused (invalid-input) unless empty or INSTANCE_ID_PATTERN: the id names the default socket of every later start. */
  setInstanceID(id: string): Promise<{ changed: boolean }> {
    if (id !== '' && !INSTANCE_ID_PATTERN.test(id)) {
      return Promise.reject(new StoreError('invalid-input', `instanceID ${JSON.stringify(id.length > 40 ? `${id.slice(0, 40)}…` : id)} `
        + 'must be 1-32 letters, digits, "_", "." or "-", starting with a letter or digit: it names the default socket of every later start'));
    }
    return this.mutate((d) => docs.setTopField(d, 'instanceID', id));
  }

  /** Go's WorkspaceRoot: the workspace, else the legacy repo (defaults overlay applied). */
  workspaceRoot(): string {
    const s = this.getState();
    return s.workspace || s.repo || '';
  }

  sourceDir(): string {
    return this.getState().source ?? '';
  }

  /** `<instanceID>__<name>`, or the name alone without an instance id (Go's QualifiedName). */
  qualifiedName(name: string): string {
    const id = this.state.document.instanceID ?? '';
    return id === '' ? name : `${id}__${name}`;
  }

  // ---- sessions --------------------------------------------------------------------------

  /** Adds a session (Herrscher's name rule enforced) with its id and a fresh incarnation. */
  async addSession(session: NewSession, writer?: WriterKey): Promise<Session> {
    assertSessionName(session.name);
    return (await this.changingRow(session.name, this.mutate((d) => docs.addSession(d, session), { key: writer }))).session;
  }

  /**
   * Removes every row with that name. With `purge`, the transcript and journal go too, after
   * appends already queued; later appends are refused (no row), so none can recreate them.
   */
  async removeSession(name: string, opts: Guard & { purge?: boolean } = {}): Promise<{ removed: boolean }> {
    if (opts.purge) assertPathComponent(name);
    const out = this.changingRow(name, this.mutate((d) => {
      docs.checkIncarnation(d, name, opts.incarnation);
      return docs.removeSession(d, name);
    }));
    if (!opts.purge) return out;
    // The files' removals are queued now, behind the appends made before and in front of any
    // made after (queued once the row is gone, they deleted a later append: session/add or
    // requireSession false let one through); each runs only if the row's removal commits.
    const files = Promise.all([
      this.noted(this.inTurn(name, () => this.withTranscript(name, (t) => t.remove(out)))),
      this.noted(this.inTurn(name, () => this.withJournal(name, (j) => j.remove(out)))),
    ]);
    // Marked handled, not dropped: when the row's removal is refused, that refusal is the answer
    // (thrown by `await out` below, and the files' tasks remove nothing); otherwise `await files`
    // below surfaces the files' own error.
    files.catch(() => undefined);
    const removed = await out;
    try {
      await files;
    } catch (err) {
      // The row is gone and stays gone (no write undoes a commit): say so, and how to finish.
      if (!(err instanceof StoreError) || err.kind !== 'io') throw err;
      throw new StoreError('io', `session ${JSON.stringify(name)} was removed, but not all of its files: ${err.message}; `
        + 'session/remove with purge again removes what is left', err.data, err.code);
    }
    return removed;
  }

  findSession(name: string): Session | null {
    return docs.findSession(this.state.document, name) ?? null;
  }

  listSessions(): Session[] {
    return this.state.document.sessions ?? [];
  }

  setResumeToken(name: string, resumeToken: string, guard: Guard = {}): Promise<{ found: boolean; changed: boolean }> {
    return this.patch(name, { resumeToken }, guard);
  }

  setPausedReason(name: string, reason: string, guard: Guard = {}): Promise<{ found: boolean; changed: boolean }> {
    return this.patch(name, { paused_reason: reason }, guard);
  }

  setArchived(name: string, archived: boolean, guard: Guard = {}): Promise<{ found: boolean; changed: boolean }> {
    return this.patch(name, { archived }, guard);
  }

  /** Go's SetBudget: all four caps and the paused reason at once. */
  setBudget(
    name: string,
    b: { cost_cap: number; token_cap: GoInteger; cohort_cost_cap: number; cohort_token_cap: GoInteger; paused_reason: string },
    guard: Guard = {},
  ): Promise<{ found: boolean; changed: boolean }> {
    const { cost_cap, token_cap, cohort_cost_cap, cohort_token_cap, paused_reason } = b;
    return this.patch(name, { cost_cap, token_cap, cohort_cost_cap, cohort_token_cap, paused_reason }, guard);
  }

  /** Go's SetBackendTarget: vendor, cmd and model, and the resume token cleared (it was the old backend's). */
  setBackendTarget(
    name: string,
    t: { vendor: string; cmd: string; modelId: string },
    guard: Guard = {},
  ): Promise<{ found: boolean; changed: boolean }> {
    return this.patch(name, { vendor: t.vendor, cmd: t.cmd, modelId: t.modelId, resumeToken: '' }, guard);
  }

  // ---- transcripts -----------------------------------------------------------------------

  /** Appends one entry to a session's transcript (refused without a session row unless asked); resolves with its seq. */
  appendTranscript(name: string, entry: Entry, opts: AppendOptions = {}): Promise<number> {
    return this.appendKeys.keyed(opts.writer, (key) =>
      this.noted(this.forAppend(name, opts, () => this.transcripts.use(name, (t) => t.append(entry, key), { writes: true }))));
  }

  async readTranscript(name: string, limit = 0): Promise<Entry[]> {
    return this.withTranscript(name, (t) => t.read(limit));
  }

  async lastTranscriptTs(name: string): Promise<string> {
    return this.withTranscript(name, (t) => t.last());
  }

  /** The newest `limit` entries older than seq `before`, and the seq of the first (paging). */
  async readTranscriptPage(name: string, opts: { limit?: number; before?: number }): Promise<Page> {
    return this.withTranscript(name, (t) => t.page(opts));
  }

  /** Entries of `name` from seq `from` on, a bounded page at a time (Transcript.pageFrom). */
  async readTranscriptFrom(name: string, from: number, bounds: { limit: number; maxBytes: number }, cursor?: ForwardCursor): Promise<ForwardPage> {
    return this.withTranscript(name, (t) => t.pageFrom(from, bounds, cursor));
  }

  /** Usage over every entry ever appended under `name`, compacted ones included. */
  async transcriptUsage(name: string): Promise<Usage> {
    return this.withTranscript(name, (t) => t.usage());
  }

  /** Every session with its newest ts and usage, from memory once each transcript was read. */
  async sessionInfos(): Promise<{ session: Session; lastTs: string; usage: Usage }[]> {
    return Promise.all(
      this.listSessions().map(async (session) => {
        // A legacy row named "../x" has no file we may read: it is listed with no transcript.
        if (!isPathComponent(session.name)) return { session, lastTs: '', usage: zeroUsage() };
        const usage = await this.withTranscript(session.name, (t) => t.usage());
        return { session, lastTs: usage.lastTs, usage };
      }),
    );
  }

  async removeTranscript(name: string): Promise<boolean> {
    this.assertOpen();
    return this.noted(this.inTurn(name, () => this.withTranscript(name, (t) => t.remove())));
  }

  // ---- participants ----------------------------------------------------------------------

  /** Adds a user id to a session's journal; `added` is false when it was there already. */
  appendParticipant(name: string, userId: string, opts: AppendOptions = {}): Promise<boolean> {
    return this.noted(this.forAppend(name, opts, () => this.journals.use(name, (j) => j.append(userId), { writes: true })));
  }

  async readParticipants(name: string): Promise<string[]> {
    return this.withJournal(name, (j) => j.read());
  }

  async removeParticipants(name: string): Promise<boolean> {
    this.assertOpen();
    return this.noted(this.inTurn(name, () => this.withJournal(name, (j) => j.remove())));
  }

  // ---- internals -------------------------------------------------------------------------

  // async so a refusal (closed, bad name) rejects, never throws; the body still enqueues synchronously.
  private async mutate<R>(apply: (d: Doc) => docs.Outcome<R>, opts: { writeIfMissing?: boolean; key?: WriterKey | undefined } = {}): Promise<R> {
    this.assertOpen();
    return this.noted(this.state.mutate(apply, opts));
  }

  /**
   * `write` as is; a refusal by the file system (ENOSPC, EIO, EMFILE…) is also recorded in the
   * storage health, so `status` is unhealthy for a minute after any refused write, not only after
   * the failures nobody else hears of. The caller still gets the error; nothing is logged (the
   * caller was told, and a full disk would log once per append).
   */
  private noted<T>(write: Promise<T>): Promise<T> {
    write.catch((err: unknown) => {
      if (err instanceof StoreError && err.kind === 'io') this.health.recordError('a write was refused', err);
    });
    return write;
  }

  /** `change` (an add or removal of `name`'s row) counted in rowChanges until it is committed or refused. */
  private changingRow<T>(name: string, change: Promise<T>): Promise<T> {
    this.rowChanges.set(name, (this.rowChanges.get(name) ?? 0) + 1);
    const done = (): void => {
      const n = (this.rowChanges.get(name) ?? 1) - 1;
      if (n === 0) this.rowChanges.delete(name);
      else this.rowChanges.set(name, n);
    };
    change.then(done, done);
    return change;
  }

  private patch(name: string, patch: SessionPatch, guard: Guard): Promise<{ found: boolean; changed: boolean }> {
    return this.mutate((d) => {
      docs.checkIncarnation(d, name, guard.incarnation);
      return docs.patchSession(d, name, patch);
    }, { key: guard.writer });
  }

  private assertOpen(): void {
    if (this.writesRefused) throw new StoreError('closed', 'the server is shutting down; no more writes');
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
   * failed refused the append behind it -32011 while the row stayed). A mutation called later (a
   * `session/remove` pipelined behind) cannot refuse it; one called earlier that fails, or an
   * outside edit loaded before its turn, can. The checks include the name's, so `enqueue` may
   * use the name caches directly.
   */
  private forAppend<T>(name: string, opts: AppendOptions, enqueue: () => Promise<T>): Promise<T> {
    const check = (d: Doc): void => {
      // A guard speaks of a lifetime: its row being gone is a conflict (data.incarnation null).
      docs.checkIncarnation(d, name, opts.incarnation);
      if (opts.requireSession !== false && !docs.findSession(d, name)) {
        throw new StoreError('unknown-session', `no session named ${JSON.stringify(name)}`);
      }
    };
    const decidedNow = !this.rowChanges.has(name) && this.savesInFlight === 0;
    try {
      this.assertOpen();
      assertPathComponent(name);
      if (decidedNow) check(this.state.pendingDocument);
    } catch (err) {
      return Promise.reject(err);
    }
    if (decidedNow) return this.inTurn(name, enqueue);
    // Changes nothing, so it writes nothing; it is applied again wherever the mutations before
    // it are (after a failed commit, onto an outside edit), and settles with their commit.
    const placed = this.state.mutate((d) => {
      check(d);
      return { doc: d, result: undefined };
    });
    return this.inTurn(name, enqueue, () => placed);
  }

  /**
   * `enqueue` now, unless a write to the name's files still waits for its session row: then
   * behind that write's enqueue (after `wait`, if given), so a removal or append called later is
   * never queued before it.
   */
  private inTurn<T>(name: string, enqueue: () => Promise<T>, wait?: () => Promise<unknown>): Promise<T> {
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

  /** Runs `fn` on the name's transcript object, kept (within the cache bound) while it has a row. */
  private withTranscript<R>(name: string, fn: (t: Transcript) => Promise<R>): Promise<R> {
    assertPathComponent(name);
    return this.transcripts.use(name, fn);
  }

  private seqMark(name: string): SeqMark {
    const m = this.marks;
    return { get: () => m.get(name), raise: (next) => m.raise(name, next), reset: () => m.reset(name), save: () => m.save() };
  }

  private withJournal<R>(name: string, fn: (j: Participants) => Promise<R>): Promise<R> {
    assertPathComponent(name);
    return this.journals.use(name, fn);
  }

  private newTranscript(name: string): Transcript {
    const rel = transcriptRel(name);
    const meta = metaRel(name, this.side);
    return new Transcript({
      io: this.io, file: path.join(this.dir, rel), rel, metaFile: path.join(this.dir, meta), metaRelPath: meta,
      durability: this.durability, log: this.log, wal: this.wal, mark: this.seqMark(name), keys: this.appendKeys,
      onAppend: (seq, entry) => {
        for (const l of this.listeners) l.transcriptAppended?.(name, seq, entry);
      },
    });
  }

  private newJournal(name: string): Participants {
    const rel = participantsRel(name);
    return new Participants({
      io: this.io, file: path.join(this.dir, rel), rel, durability: this.durability, log: this.log, wal: this.wal,
      onAdd: (userId) => {
        for (const l of this.listeners) l.participantAdded?.(name, userId);
      },
    });
  }
}

/** The folders of `side` (relative to dir) that do not exist yet, outermost first. */
async function missingFolders(io: Io, dir: string, side: string): Promise<string[]> {
  const parts = side.split('/');
  const out: string[] = [];
  for (let i = 1; i <= parts.length; i++) {
    const rel = parts.slice(0, i).join('/');
    try {
      await io.lstat(path.join(dir, rel));
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
      out.push(rel);
    }
  }
  return out;
}

/** After a failed start: the server lock file and the folders the start made, when nothing else is in them. */
async function removeIfCreated(io: Io, paths: StatePaths, created: string[]): Promise<void> {
  if (created.length === 0) return;
  try {
    await io.unlink(paths.serverLockPath);
  } catch {
    // absent (the start failed before taking it) or not removable: the folders then stay, harmless
  }
  for (const rel of created.reverse()) {
    try {
      await rmdir(path.join(paths.dir, rel));
    } catch {
      return; // not empty: the start wrote something there that is worth keeping; leave it
    }
  }
}

/** The server lock, then the state file's lock, released as one (the server's first). */
function bothLocks(server: HeldLock | undefined, state: HeldLock | undefined): HeldLock | undefined {
  if (!state) return server;
  return {
    release() {
      server?.release();
      state.release();
    },
  };
}

/** The session name of `transcripts/<name>.jsonl`. */
const nameOfTranscript = (rel: string): string => rel.slice('transcripts/'.length, -'.jsonl'.length);

/** fdatasync of a store file by its relative name (a checkpoint); a file removed since is fine. */
async function syncByName(io: Io, dir: string, rel: string): Promise<void> {
  let fh;
  try {
    fh = await io.open(path.join(dir, rel), 'r');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return; // removed since it was written: nothing to sync
    throw err;
  }
  try {
    await io.datasync(fh);
  } finally {
    await fh.close();
  }
}
