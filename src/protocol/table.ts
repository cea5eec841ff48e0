// Every method, keyed by wire name: the one list the server, the client and schema/ derive from.
import * as backup from './backup.js';
import type { MethodDef, NotificationDef } from './define.js';
import * as lifecycle from './lifecycle.js';
import * as participants from './participants.js';
import * as session from './session.js';
import * as state from './state.js';
import * as status from './status.js';
import * as transcript from './transcript.js';
import * as watch from './watch.js';

const defs = [
  lifecycle.initialize, lifecycle.shutdown, lifecycle.exit, lifecycle.rpcDiscover, status.status, backup.backup,
  state.stateGet, state.stateSave, state.stateApplyDefaults, state.stateSetHome, state.stateSetWorkspace, state.stateSetSource,
  state.stateSetStatusMessageID, state.stateSetInstanceID, state.stateWorkspaceRoot, state.stateSourceDir,
  state.stateQualifiedName,
  session.sessionAdd, session.sessionRemove, session.sessionFind, session.sessionList,
  session.sessionSetResumeToken, session.sessionSetPausedReason, session.sessionSetBudget,
  session.sessionSetBackendTarget, session.sessionSetArchived, session.sessionInfos,
  transcript.transcriptAppend, transcript.transcriptRead, transcript.transcriptLast, transcript.transcriptUsage,
  transcript.transcriptRemove,
  participants.participantsAppend, participants.participantsRead, participants.participantsRemove,
  watch.watchSubscribe, watch.watchUnsubscribe,
] as const;

const notifications = [
  watch.sessionDidChange, watch.stateDidChange, watch.stateResync, watch.transcriptDidAppend, watch.participantsDidAdd, watch.watchOverflow,
] as const;

/** Notifications the server sends, by wire name. */
export type NotificationTable = { [D in (typeof notifications)[number] as D['method']]: D };
export type NotificationName = keyof NotificationTable;
export const notificationList: readonly NotificationDef[] = notifications;

type Defs = (typeof defs)[number];

// A method defined in a protocol module but left out of `defs` would silently not exist: the
// server would answer -32601 and no schema or client would know it. The lines below make that a
// type error naming the method; a new module is covered by test/protocol/named-types.test.ts
// ("every exported method and notification of src/protocol is in the table").
type DefsIn<Module> = Module extends unknown
  ? { [K in keyof Module]: Module[K] extends MethodDef ? Module[K]['method'] : never }[keyof Module]
  : never;
type NotificationsIn<Module> = Module extends unknown
  ? { [K in keyof Module]: Module[K] extends MethodDef ? never : Module[K] extends NotificationDef ? Module[K]['method'] : never }[keyof Module]
  : never;
type Modules = typeof backup | typeof lifecycle | typeof participants | typeof session | typeof state | typeof transcript | typeof watch;
type Unlisted<Module> = Exclude<DefsIn<Module>, Defs['method']> | Exclude<NotificationsIn<Module>, (typeof notifications)[number]['method']>;
type MustBeEmpty<T extends never> = T;
/** Fails to compile with "Type '"x/y"' does not satisfy the constraint 'never'", naming the method. */
export type EveryMethodListed = MustBeEmpty<Unlisted<Modules>>;

/** Method definitions by wire name. */
export type MethodTable = { [D in Defs as D['method']]: D };
export type MethodName = keyof MethodTable;

export const methods = Object.fromEntries(defs.map((d) => [d.method, d])) as unknown as MethodTable;
export const methodList: readonly MethodDef[] = defs;
