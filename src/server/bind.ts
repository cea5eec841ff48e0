// The method table bound to the store: each handler takes parsed params, makes one store call and
// shapes the result. The logic lives in the store; the lifecycle lives in the server.
import type { ParsedParamsOf } from '../protocol/define.js';
import type { MethodName, MethodTable } from '../protocol/table.js';
import type * as z from 'zod';
import type { Store } from '../store/store.js';
import type { Subscribed } from './feed-limits.js';
import type { CallMetrics } from './call-metrics.js';
import type { WriteHold } from './write-hold.js';

/** What a handler may need beyond the store: the server's lifecycle and its own connection. */
export interface ServerContext {
  readonly store: Store;
  /** The server's write hold, which every connection's writes pass (write-hold.ts). */
  readonly writes: WriteHold;
  /** Where every connection counts the calls it answered (status). */
  readonly metrics: CallMetrics;
  /** The handshake; `state` naming another file than the one served is refused (NotThisState). */
  initialize(params: ParsedParamsOf<MethodTable['initialize']>): Promise<z.input<MethodTable['initialize']['result']>>;
  shutdown(): Promise<void>;
  exit(): void;
  discover(): Record<string, unknown>;
  status(): z.input<MethodTable['status']['result']>;
  /** Writes a consistent copy of the state dir into `dest` (store/backup.ts), writes held only while it is fixed. */
  backup(dest: string): Promise<z.input<MethodTable['backup']['result']>>;
  /** Subscribes the calling connection to the change feed (with `since`, what it missed first). */
  subscribe(filter: ParsedParamsOf<MethodTable['watch/subscribe']>): Subscribed;
  unsubscribe(id: string): boolean;
}

/** One method's own handler: its params, parsed against the contract, in; its result out. */
export type MethodHandler<M extends MethodName> = (
  params: ParsedParamsOf<MethodTable[M]>,
  ctx: ServerContext,
) => Promise<z.input<MethodTable[M]['result']>> | z.input<MethodTable[M]['result']>;

export type MethodHandlers = { [M in MethodName]: MethodHandler<M> };

const guard = (p: { incarnation?: string | undefined; writer?: { id: string; seq: number } | undefined }) => ({ incarnation: p.incarnation, writer: p.writer });

/**
 * A read of the document, made after the store looked whether another process changed
 * state.json. Only reads: a write must be queued in the turn it arrives (the order of a
 * connection's writes), and the store looks right before it writes anyway.
 */
const fresh = <M extends MethodName>(h: MethodHandler<M>): MethodHandler<M> => async (p, ctx) => {
  await ctx.store.refresh();
  return h(p, ctx);
};
const appendOptions = (p: { incarnation?: string | undefined; requireSession?: boolean | undefined; writer?: { id: string; seq: number } | undefined }) =>
  ({ incarnation: p.incarnation, requireSession: p.requireSession, writer: p.writer });

export const handlers: MethodHandlers = {
  initialize: (p, ctx) => ctx.initialize(p),
  shutdown: async (_p, ctx) => {
    await ctx.shutdown();
    return null;
  },
  exit: (_p, ctx) => {
    ctx.exit();
    return null;
  },
  'rpc.discover': (_p, ctx) => ctx.discover(),
  // Looks at state.json first, as a read does: one changed by hand that cannot be loaded refuses
  // every write, and status must not call the server healthy before anything else looked.
  status: fresh((_p, ctx) => ctx.status()),
  backup: (p, ctx) => ctx.backup(p.dest),

  'state/get': fresh((p, { store }) => ({ state: p.persisted ? store.getPersistedState() : store.getState(), revision: store.revision, epoch: store.epoch })),
  'state/save': (p, { store }) => store.saveState(p.state, p.revision, p.epoch, p.writer),
  'state/applyDefaults': fresh((p, { store }) => ({ state: store.applyDefaults(p) })),
  'state/setHome': (p, { store }) => store.setHome(p.home),
  'state/setWorkspace': (p, { store }) => store.setWorkspace(p.workspace),
  'state/setSource': (p, { store }) => store.setSource(p.source),
  'state/setStatusMessageID': (p, { store }) => store.setStatusMessageID(p.statusMessageID),
  'state/setInstanceID': (p, { store }) => store.setInstanceID(p.instanceID),
  'state/workspaceRoot': fresh((_p, { store }) => ({ workspaceRoot: store.workspaceRoot() })),
  'state/sourceDir': fresh((_p, { store }) => ({ sourceDir: store.sourceDir() })),
  'state/qualifiedName': fresh((p, { store }) => ({ qualifiedName: store.qualifiedName(p.name) })),

  'session/add': async (p, { store }) => ({ session: await store.addSession(p.session, p.writer) }),
  'session/remove': (p, { store }) => store.removeSession(p.name, { purge: p.purge, ...guard(p) }),
  'session/find': fresh((p, { store }) => ({ session: store.findSession(p.name) })),
  'session/list': fresh((_p, { store }) => ({ sessions: store.listSessions() })),
  'session/setResumeToken': (p, { store }) => store.setResumeToken(p.name, p.resumeToken, guard(p)),
  'session/setPausedReason': (p, { store }) => store.setPausedReason(p.name, p.paused_reason, guard(p)),
  'session/setBudget': (p, { store }) => store.setBudget(p.name, p, guard(p)),
  'session/setBackendTarget': (p, { store }) => store.setBackendTarget(p.name, p, guard(p)),
  'session/setArchived': (p, { store }) => store.setArchived(p.name, p.archived, guard(p)),
  'session/infos': fresh(async (_p, { store }) => ({ sessions: await store.sessionInfos() })),

  'transcript/append': async (p, { store }) => ({ seq: await store.appendTranscript(p.name, p.entry, appendOptions(p)) }),
  'transcript/read': (p, { store }) => store.readTranscriptPage(p.name, { limit: p.limit ?? 0, before: p.before }),
  'transcript/last': async (p, { store }) => ({ ts: await store.lastTranscriptTs(p.name) }),
  'transcript/usage': (p, { store }) => store.transcriptUsage(p.name),
  'transcript/remove': async (p, { store }) => ({ removed: await store.removeTranscript(p.name) }),

  'participants/append': async (p, { store }) => ({ added: await store.appendParticipant(p.name, p.userId, appendOptions(p)) }),
  'participants/read': async (p, { store }) => ({ userIds: await store.readParticipants(p.name) }),
  'participants/remove': async (p, { store }) => ({ removed: await store.removeParticipants(p.name) }),

  // Registered before the revision is read: nothing committed after it can be missed.
  'watch/subscribe': (p, ctx) => ctx.subscribe(p),
  'watch/unsubscribe': (p, ctx) => ({ unsubscribed: ctx.unsubscribe(p.subscription) }),
};
