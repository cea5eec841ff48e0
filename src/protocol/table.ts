// Every method, keyed by wire name: the one list the server, the client and schema/ derive from.
import type { MethodDef, NotificationDef } from './define.js';
import * as lifecycle from './lifecycle.js';
import * as participants from './participants.js';
import * as session from './session.js';
import * as state from './state.js';
import * as transcript from './transcript.js';
import * as watch from './watch.js';

const defs = [
  lifecycle.initialize, lifecycle.shutdown, lifecycle.exit, lifecycle.rpcDiscover,
  state.stateGet, state.stateApplyDefaults, state.stateSetHome, state.stateSetWorkspace, state.stateSetSource,
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
  watch.sessionDidChange, watch.stateDidChange, watch.transcriptDidAppend, watch.participantsDidAdd, watch.watchOverflow,
] as const;

/** Notifications the server sends, by wire name. */
export type NotificationTable = { [D in (typeof notifications)[number] as D['method']]: D };
export type NotificationName = keyof NotificationTable;
export const notificationList: readonly NotificationDef[] = notifications;

type Defs = (typeof defs)[number];

/** Method definitions by wire name. */
export type MethodTable = { [D in Defs as D['method']]: D };
export type MethodName = keyof MethodTable;

export const methods = Object.fromEntries(defs.map((d) => [d.method, d])) as unknown as MethodTable;
export const methodList: readonly MethodDef[] = defs;
