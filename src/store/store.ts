// The store: one state dir owned by one process. Every operation of Herrscher's Go state package as a
// method, with Go's results except the Go defects we fix (docs/go-compatibility.md). Knows nothing of RPC.
//
// A facade over its parts, each a file of its own:
//   store-open.ts     opening: the folder checked, the locks taken, temp files swept, then
//   recovery.ts       the high-water marks loaded and the write-ahead log replayed, before
//   state-store.ts    state.json is loaded (its commit queue runs every state mutation);
//   write-order.ts    which writes are taken, and where a name's file writes go among its row's mutations;
//   session-files.ts  each session's transcript and participants journal (transcript.ts, participants.ts);
//   session-purge.ts  session/remove with purge: the files removed in the name's order;
//   change-feed.ts    the committed changes told to listeners;
//   state-save.ts     state/save's revision check.
import { randomUUID } from 'node:crypto';
import type { GoInteger, HomeRef, NewSession, Session } from '../protocol/model.js';
import { INSTANCE_ID_PATTERN } from '../protocol/model.js';
import type { BackupSource } from './backup.js';
import type { StoreEvents } from './change-feed.js';
import { ChangeFeed } from './change-feed.js';
import type { StorageHealth } from './health.js';
import type { StoreCounters } from './store-counters.js';
import { assertPathComponent, assertSessionName, isPathComponent, participantsRel, transcriptRel } from './paths.js';
import { purgeWithRow } from './session-purge.js';
import { SessionFiles } from './session-files.js';
import type { Defaults, Doc } from './state-document.js';
import * as docs from './state-document.js';
import { saveDocument } from './state-save.js';
import type { Durability } from './state-store.js';
import { StoreError } from './store-error.js';
import type { StoreOptions, StoreParts } from './store-open.js';
import { openStore } from './store-open.js';
import type { ForwardCursor, ForwardPage, Page } from './transcript-pages.js';
import type { Entry } from './transcript-read.js';
import type { Usage } from './usage.js';
import { zeroUsage } from './usage.js';
import type { AppendOptions, Guard } from './write-order.js';
import { WriteOrder } from './write-order.js';
import type { WriterKey } from './writer-sequences.js';

export type { StoreEvents } from './change-feed.js';
export type { StoreOptions } from './store-open.js';
export type { AppendOptions, Guard } from './write-order.js';

type SessionPatch = Partial<Pick<Session, 'resumeToken' | 'paused_reason' | 'archived' | 'vendor' | 'cmd' | 'modelId'
  | 'cost_cap' | 'token_cap' | 'cohort_cost_cap' | 'cohort_token_cap'>>;

export class Store {
  private readonly files: SessionFiles;
  private readonly order: WriteOrder;
  private readonly feed = new ChangeFeed();
  private defaults: Defaults = {};
  private closing: Promise<void> | undefined;
  private revisionCount = 0;
  /** This run of the store: revisions count from 0 again in the next one, so one is comparable only with its epoch. */
  readonly epoch: string = randomUUID();

  readonly statePath: string;
  readonly dir: string;
  readonly durability: Durability;
  /** Storage health for `status`: fed by every error the store logs and by checkpoints. */
  readonly health: StorageHealth;
  /** Syncs and compactions since the store opened, for `status`. */
  readonly counters: StoreCounters;

  /** What store-open.ts opened: the state, the locks, the log, the marks and the side folder. */
  private constructor(private readonly parts: StoreParts) {
    this.statePath = parts.statePath;
    this.dir = parts.dir;
    this.durability = parts.durability;
    this.health = parts.health;
    this.counters = parts.counters;
    this.order = new WriteOrder(parts.state, parts.health, parts.dirWatch);
    this.files = new SessionFiles({
      io: parts.io, dir: parts.dir, side: parts.side, durability: parts.durability, log: parts.log, wal: parts.wal, marks: parts.marks,
      appendKeys: parts.appendKeys, feed: this.feed, counters: parts.counters, hasRow: (name) => docs.findSession(this.parts.state.pendingDocument, name) !== undefined, cachedNames: parts.cachedNames,
    });
    parts.state.onCommit((before, after) => {
      this.revisionCount++;
      this.feed.stateCommitted(this.revisionCount, before, after);
    });
  }

  /** Locks, sweeps temp files a crash left, recovers the side files and loads state.json (store-open.ts). */
  static async open(statePath: string, options: StoreOptions = {}): Promise<Store> {
    return new Store(await openStore(statePath, options));
  }

  /**
   * Whether the state dir was removed (or another folder put at its path) since the open: the
   * store never makes it again, and every write fails with an error `isStateGone` recognises
   * (kind io, code ENOENT, `data.reason` 'gone', naming the dir). Its owner drops the store then
   * (close writes nothing) and opens it anew on the next explicit write, as Go's Save makes the dir.
   */
  get gone(): boolean {
    return this.parts.dirWatch.gone;
  }

  /** Bytes in the write-ahead log not yet checkpointed (0 with durability `write`, which has none). */
  get walBytes(): number {
    return this.parts.wal?.bytes ?? 0;
  }

  /** Names with a cached Transcript and Participants object now (the bound in docs/limits.md). */
  get cachedNames(): { transcripts: number; journals: number } {
    return this.files.cachedNames;
  }

  /** Increases with every committed state change (the change feed's `revision`). */
  get revision(): number {
    return this.revisionCount;
  }

  /** What a backup fixes of this store (backup.ts): call it while no write is in flight. */
  backupSource(): BackupSource {
    return {
      dir: this.dir, statePath: this.statePath, side: this.parts.side, revision: this.revisionCount, epoch: this.epoch, marks: new Map(this.parts.marks.entries()),
      writerKeys: this.parts.state.writerKeys(), appendKeys: this.parts.appendKeys.keys.entries(),
    };
  }

  /** Registers listeners for committed changes; returns the function that removes them. */
  watch(listener: Partial<StoreEvents>): () => void {
    return this.feed.watch(listener);
  }

  /**
   * Refuses new writes, finishes every queued one, closes the files and releases the lock. Writes
   * nothing of its own (no checkpoint, no marks, no summary): once a call has returned, the store
   * never writes for it again, so a folder removed after the last call stays removed. What a
   * close used to write is recovered at the next open (the log's replay raises the marks; a
   * transcript without a current summary is scanned). Also after a shutdown, which only refused
   * writes.
   */
  close(): Promise<void> {
    this.order.refuse();
    this.closing ??= (async () => {
      await this.flush();
      await this.files.close();
      await this.parts.state.close();
      await this.parts.appendKeys.close();
      await this.parts.wal?.close();
      this.parts.lock?.release();
    })();
    return this.closing;
  }

  /** Resolves when every write accepted so far is done (shutdown drains with it). */
  async flush(): Promise<void> {
    await this.parts.state.settled();
    await this.files.settled();
    await this.parts.wal?.settled();
  }

  /** Stops accepting writes (shutdown), keeping reads. */
  refuseWrites(): void {
    this.order.refuse();
  }

  // ---- state document -------------------------------------------------------------------

  /** The committed document with config defaults overlaid (never persisted, unlike Go). */
  getState(): Doc {
    return docs.withDefaults(this.parts.state.document, this.defaults);
  }

  /**
   * Loads state.json first if another process changed it (size, mtime or inode) since the store
   * last read or wrote it: the server calls it before it answers a read of the document. Writes
   * look by themselves, right before they write. Never rejects: a file that cannot be loaded is
   * logged and the last document kept (writes are then refused until it is fixed).
   */
  refresh(): Promise<void> {
    return this.closing ? Promise.resolve() : this.parts.state.refresh();
  }

  /**
   * The committed document exactly as state.json holds it, without the defaults overlay. Throws
   * the load's error while the file, changed by another process, cannot be loaded: the last good
   * document is not what the file holds then, and a caller loading the state (Go's LoadState)
   * must hear why, as Go's would.
   */
  getPersistedState(): Doc {
    const failure = this.parts.state.loadFailure;
    if (failure) throw failure;
    return this.parts.state.document;
  }

  /**
   * Go's Save of a whole in-memory document, if the state is still at `revision`; else a
   * conflict carrying the current one (state-save.ts).
   */
  saveState(doc: Doc, revision: number, epoch?: string, writer?: WriterKey): Promise<{ revision: number; changed: boolean }> {
    return saveDocument(this.parts.state, this.order, () => ({ revision: this.revisionCount, epoch: this.epoch }), doc, revision, epoch, writer);
  }

  /** Go's ApplyDefaults as a read-time overlay: fills only what the file leaves empty. */
  applyDefaults(d: Defaults): Doc {
    this.defaults = docs.mergeDefaults(this.defaults, d);
    return this.getState();
  }

  setHome(home: HomeRef): Promise<{ changed: boolean }> {
    return this.order.mutate((d) => docs.setHome(d, home));
  }

  setWorkspace(workspace: string): Promise<{ changed: boolean }> {
    return this.order.mutate((d) => docs.setTopField(d, 'workspace', workspace));
  }

  setSource(source: string): Promise<{ changed: boolean }> {
    return this.order.mutate((d) => docs.setTopField(d, 'source', source));
  }

  setStatusMessageID(id: string): Promise<{ changed: boolean }> {
    return this.order.mutate((d) => docs.setTopField(d, 'statusMessageID', id));
  }

  /** Refused (invalid-input) unless empty or INSTANCE_ID_PATTERN: the id names the default socket of every later start. */
  setInstanceID(id: string): Promise<{ changed: boolean }> {
    if (id !== '' && !INSTANCE_ID_PATTERN.test(id)) {
      return Promise.reject(new StoreError('invalid-input', `instanceID ${JSON.stringify(id.length > 40 ? `${id.slice(0, 40)}…` : id)} `
        + 'must be 1-32 letters, digits, "_", "." or "-", starting with a letter or digit: it names the default socket of every later start'));
    }
    return this.order.mutate((d) => docs.setTopField(d, 'instanceID', id));
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
    const id = this.parts.state.document.instanceID ?? '';
    return id === '' ? name : `${id}__${name}`;
  }

  // ---- sessions --------------------------------------------------------------------------

  /** Adds a session (Herrscher's name rule enforced) with its id and a fresh incarnation. */
  async addSession(session: NewSession, writer?: WriterKey): Promise<Session> {
    assertSessionName(session.name);
    return (await this.order.changingRow(session.name, this.order.mutate((d) => docs.addSession(d, session), { key: writer }))).session;
  }

  /**
   * Removes every row with that name. With `purge`, the transcript and journal go too, after
   * appends already queued; later appends are refused (no row), so none can recreate them.
   */
  async removeSession(name: string, opts: Guard & { purge?: boolean } = {}): Promise<{ removed: boolean }> {
    if (opts.purge) assertPathComponent(name);
    const out = this.order.changingRow(name, this.order.mutate((d) => {
      docs.checkIncarnation(d, name, opts.incarnation);
      return docs.removeSession(d, name);
    }));
    return opts.purge ? purgeWithRow(this.order, this.files, name, out) : out;
  }

  findSession(name: string): Session | null {
    return docs.findSession(this.parts.state.document, name) ?? null;
  }

  listSessions(): Session[] {
    return this.parts.state.document.sessions ?? [];
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
    return this.parts.appendKeys.keyed(opts.writer, (key) =>
      this.order.noted(this.order.forAppend(name, opts, () => this.inDir(`append to ${transcriptRel(name)}`, () =>
        this.files.appendingTranscript(name, (t) => t.append(entry, key))))));
  }

  async readTranscript(name: string, limit = 0): Promise<Entry[]> {
    return this.files.withTranscript(name, (t) => t.read(limit));
  }

  async lastTranscriptTs(name: string): Promise<string> {
    return this.files.withTranscript(name, (t) => t.last());
  }

  /** The newest `limit` entries older than seq `before`, and the seq of the first (paging). */
  async readTranscriptPage(name: string, opts: { limit?: number; before?: number }): Promise<Page> {
    return this.files.withTranscript(name, (t) => t.page(opts));
  }

  /** Entries of `name` from seq `from` on, a bounded page at a time (Transcript.pageFrom). */
  async readTranscriptFrom(name: string, from: number, bounds: { limit: number; maxBytes: number }, cursor?: ForwardCursor): Promise<ForwardPage> {
    return this.files.withTranscript(name, (t) => t.pageFrom(from, bounds, cursor));
  }

  /** Usage over every entry ever appended under `name`, compacted ones included. */
  async transcriptUsage(name: string): Promise<Usage> {
    return this.files.withTranscript(name, (t) => t.usage());
  }

  /** Every session with its newest ts and usage, from memory once each transcript was read. */
  async sessionInfos(): Promise<{ session: Session; lastTs: string; usage: Usage }[]> {
    return Promise.all(
      this.listSessions().map(async (session) => {
        // A legacy row named "../x" has no file we may read: it is listed with no transcript.
        if (!isPathComponent(session.name)) return { session, lastTs: '', usage: zeroUsage() };
        const usage = await this.files.withTranscript(session.name, (t) => t.usage());
        return { session, lastTs: usage.lastTs, usage };
      }),
    );
  }

  async removeTranscript(name: string): Promise<boolean> {
    this.order.assertOpen();
    return this.order.noted(this.order.inTurn(name, () => this.inDir(`remove ${transcriptRel(name)}`, () => this.files.withTranscript(name, (t) => t.remove()))));
  }

  // ---- participants ----------------------------------------------------------------------

  /** Adds a user id to a session's journal; `added` is false when it was there already. */
  appendParticipant(name: string, userId: string, opts: AppendOptions = {}): Promise<boolean> {
    return this.order.noted(this.order.forAppend(name, opts, () => this.inDir(`append to ${participantsRel(name)}`, () =>
      this.files.appendingJournal(name, (j) => j.append(userId)))));
  }

  async readParticipants(name: string): Promise<string[]> {
    return this.files.withJournal(name, (j) => j.read());
  }

  async removeParticipants(name: string): Promise<boolean> {
    this.order.assertOpen();
    return this.order.noted(this.order.inTurn(name, () => this.inDir(`remove ${participantsRel(name)}`, () => this.files.withJournal(name, (j) => j.remove()))));
  }

  // ---- internals -------------------------------------------------------------------------

  /** `write()`, unless the state dir is gone (state-gone.ts): then the gone error, and nothing is touched. */
  private inDir<T>(what: string, write: () => Promise<T>): Promise<T> {
    try {
      this.parts.dirWatch.assertHere(what);
    } catch (err) {
      return Promise.reject(err);
    }
    return write();
  }

  private patch(name: string, patch: SessionPatch, guard: Guard): Promise<{ found: boolean; changed: boolean }> {
    return this.order.mutate((d) => {
      docs.checkIncarnation(d, name, guard.incarnation);
      return docs.patchSession(d, name, patch);
    }, { key: guard.writer });
  }
}
