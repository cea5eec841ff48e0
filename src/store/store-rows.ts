// The state document and its session rows as the Store serves them (store.ts delegates here):
// reads with the config defaults overlaid, every top-level field and row mutation queued through
// the write order (write-order.ts) as a pure function of the document (state-document.ts), and
// state/save's revision check (state-save.ts).
import type { GoInteger, HomeRef, NewSession, Session } from '../protocol/model.js';
import { INSTANCE_ID_PATTERN } from '../protocol/model.js';
import { assertPathComponent, assertSessionName } from './paths.js';
import { purgeWithRow } from './session-purge.js';
import type { SessionFiles } from './session-files.js';
import type { Defaults, Doc } from './state-document.js';
import * as docs from './state-document.js';
import type { RevisionNow } from './state-save.js';
import { saveDocument } from './state-save.js';
import type { StateStore } from './state-store.js';
import { StoreError } from './store-error.js';
import type { Guard } from './write-order.js';
import type { WriteOrder } from './write-order.js';
import type { WriterKey } from './writer-sequences.js';

type SessionPatch = Partial<Pick<Session, 'resumeToken' | 'paused_reason' | 'archived' | 'vendor' | 'cmd' | 'modelId'
  | 'cost_cap' | 'token_cap' | 'cohort_cost_cap' | 'cohort_token_cap'>>;

export class StoreRows {
  private defaults: Defaults = {};

  constructor(
    private readonly state: StateStore,
    private readonly order: WriteOrder,
    private readonly files: SessionFiles,
    /** The store's revision and run now (state/save compares against them). */
    private readonly now: () => RevisionNow,
    /** Whether the store is closing (a refresh then looks at nothing). */
    private readonly closing: () => boolean,
  ) {}

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
    return this.closing() ? Promise.resolve() : this.state.refresh();
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
   * Go's Save of a whole in-memory document, if the state is still at `revision`; else a
   * conflict carrying the current one (state-save.ts).
   */
  saveState(doc: Doc, revision: number, epoch?: string, writer?: WriterKey): Promise<{ revision: number; changed: boolean }> {
    return saveDocument(this.state, this.order, this.now, doc, revision, epoch, writer);
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
    const id = this.state.document.instanceID ?? '';
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

  private patch(name: string, patch: SessionPatch, guard: Guard): Promise<{ found: boolean; changed: boolean }> {
    return this.order.mutate((d) => {
      docs.checkIncarnation(d, name, guard.incarnation);
      return docs.patchSession(d, name, patch);
    }, { key: guard.writer });
  }
}
