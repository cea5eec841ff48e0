// The store: one state dir owned by one process. Every operation of Herrscher's Go state package as a
// method, with Go's results except the Go defects we fix (docs/go-compatibility.md). Knows nothing of RPC.
//
// A facade: its methods delegate, a group to each part, and it owns the lifecycle (open, flush,
// close) and the revision count. The parts, each a file of its own:
//   store-rows.ts         the state document and its session rows: reads, mutations, state/save;
//   store-transcripts.ts  each session's transcript: keyed appends, reads, pages, usage;
//   store-journals.ts     each session's participants journal;
//   store-open.ts         opening: the folder checked, the locks taken, temp files swept, then
//   recovery.ts           the high-water marks loaded and the write-ahead log replayed, before
//   state-store.ts        state.json is loaded (its commit queue runs every state mutation);
//   write-order.ts        which writes are taken, and where a name's file writes go among its row's mutations;
//   session-files.ts      each session's transcript and participants journal (transcript.ts, participants.ts);
//   session-purge.ts      session/remove with purge: the files removed in the name's order;
//   change-feed.ts        the committed changes told to listeners;
//   state-save.ts         state/save's revision check.
import { randomUUID } from 'node:crypto';
import type { GoInteger, HomeRef, NewSession, Session } from '../protocol/model.js';
import type { BackupSource } from './backup.js';
import type { StoreEvents } from './change-feed.js';
import { ChangeFeed } from './change-feed.js';
import type { StorageHealth } from './health.js';
import type { StoreCounters } from './store-counters.js';
import { SessionFiles } from './session-files.js';
import type { Defaults, Doc } from './state-document.js';
import { findSession } from './state-document.js';
import type { Durability } from './state-store.js';
import type { StoreOptions, StoreParts } from './store-open.js';
import { openStore } from './store-open.js';
import { StoreJournals } from './store-journals.js';
import { StoreRows } from './store-rows.js';
import { StoreTranscripts } from './store-transcripts.js';
import type { ForwardCursor, ForwardPage, Page } from './transcript-pages.js';
import type { Entry } from './transcript-read.js';
import type { Usage } from './usage.js';
import type { AppendOptions, Guard } from './write-order.js';
import { WriteOrder } from './write-order.js';
import type { WriterKey } from './writer-sequences.js';

export type { StoreEvents } from './change-feed.js';
export type { StoreOptions } from './store-open.js';
export type { AppendOptions, Guard } from './write-order.js';

type Patched = Promise<{ found: boolean; changed: boolean }>;

export class Store {
  private readonly files: SessionFiles;
  private readonly order: WriteOrder;
  private readonly feed = new ChangeFeed();
  private readonly rows: StoreRows;
  private readonly transcripts: StoreTranscripts;
  private readonly journals: StoreJournals;
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
      appendKeys: parts.appendKeys, feed: this.feed, counters: parts.counters, hasRow: (name) => findSession(this.parts.state.pendingDocument, name) !== undefined, cachedNames: parts.cachedNames,
    });
    this.rows = new StoreRows(parts.state, this.order, this.files, () => ({ revision: this.revisionCount, epoch: this.epoch }), () => this.closing !== undefined);
    this.transcripts = new StoreTranscripts(parts.appendKeys, this.order, this.files, parts.dirWatch, () => this.rows.listSessions());
    this.journals = new StoreJournals(this.order, this.files, parts.dirWatch);
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


  // The operations, one line each: the facade holds no logic, each part holds its own.

  // ---- the state document and its session rows (store-rows.ts) ---------------------------

  getState(): Doc { return this.rows.getState(); }
  refresh(): Promise<void> { return this.rows.refresh(); }
  getPersistedState(): Doc { return this.rows.getPersistedState(); }
  saveState(doc: Doc, revision: number, epoch?: string, writer?: WriterKey): Promise<{ revision: number; changed: boolean }> {
    return this.rows.saveState(doc, revision, epoch, writer);
  }
  applyDefaults(d: Defaults): Doc { return this.rows.applyDefaults(d); }
  setHome(home: HomeRef): Promise<{ changed: boolean }> { return this.rows.setHome(home); }
  setWorkspace(workspace: string): Promise<{ changed: boolean }> { return this.rows.setWorkspace(workspace); }
  setSource(source: string): Promise<{ changed: boolean }> { return this.rows.setSource(source); }
  setStatusMessageID(id: string): Promise<{ changed: boolean }> { return this.rows.setStatusMessageID(id); }
  setInstanceID(id: string): Promise<{ changed: boolean }> { return this.rows.setInstanceID(id); }
  workspaceRoot(): string { return this.rows.workspaceRoot(); }
  sourceDir(): string { return this.rows.sourceDir(); }
  qualifiedName(name: string): string { return this.rows.qualifiedName(name); }
  addSession(session: NewSession, writer?: WriterKey): Promise<Session> { return this.rows.addSession(session, writer); }
  removeSession(name: string, opts?: Guard & { purge?: boolean }): Promise<{ removed: boolean }> { return this.rows.removeSession(name, opts); }
  findSession(name: string): Session | null { return this.rows.findSession(name); }
  listSessions(): Session[] { return this.rows.listSessions(); }
  setResumeToken(name: string, resumeToken: string, guard?: Guard): Patched { return this.rows.setResumeToken(name, resumeToken, guard); }
  setPausedReason(name: string, reason: string, guard?: Guard): Patched { return this.rows.setPausedReason(name, reason, guard); }
  setArchived(name: string, archived: boolean, guard?: Guard): Patched { return this.rows.setArchived(name, archived, guard); }
  setBudget(
    name: string,
    b: { cost_cap: number; token_cap: GoInteger; cohort_cost_cap: number; cohort_token_cap: GoInteger; paused_reason: string },
    guard?: Guard,
  ): Patched {
    return this.rows.setBudget(name, b, guard);
  }
  setBackendTarget(name: string, t: { vendor: string; cmd: string; modelId: string }, guard?: Guard): Patched {
    return this.rows.setBackendTarget(name, t, guard);
  }

  // ---- transcripts (store-transcripts.ts) -------------------------------------------------

  appendTranscript(name: string, entry: Entry, opts?: AppendOptions): Promise<number> { return this.transcripts.appendTranscript(name, entry, opts); }
  readTranscript(name: string, limit?: number): Promise<Entry[]> { return this.transcripts.readTranscript(name, limit); }
  lastTranscriptTs(name: string): Promise<string> { return this.transcripts.lastTranscriptTs(name); }
  readTranscriptPage(name: string, opts: { limit?: number; before?: number }): Promise<Page> { return this.transcripts.readTranscriptPage(name, opts); }
  readTranscriptFrom(name: string, from: number, bounds: { limit: number; maxBytes: number }, cursor?: ForwardCursor): Promise<ForwardPage> {
    return this.transcripts.readTranscriptFrom(name, from, bounds, cursor);
  }
  transcriptUsage(name: string): Promise<Usage> { return this.transcripts.transcriptUsage(name); }
  sessionInfos(): Promise<{ session: Session; lastTs: string; usage: Usage }[]> { return this.transcripts.sessionInfos(); }
  removeTranscript(name: string): Promise<boolean> { return this.transcripts.removeTranscript(name); }

  // ---- participants journals (store-journals.ts) ------------------------------------------

  appendParticipant(name: string, userId: string, opts?: AppendOptions): Promise<boolean> { return this.journals.appendParticipant(name, userId, opts); }
  readParticipants(name: string): Promise<string[]> { return this.journals.readParticipants(name); }
  removeParticipants(name: string): Promise<boolean> { return this.journals.removeParticipants(name); }
}
