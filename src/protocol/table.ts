// Every method, keyed by wire name: the one list the server, the client and schema/ derive from.
import type { MethodDef } from './define.js';
import * as lifecycle from './lifecycle.js';
import * as participants from './participants.js';
import * as session from './session.js';
import * as state from './state.js';
import * as transcript from './transcript.js';

const defs = [
  lifecycle.initialize, lifecycle.shutdown, lifecycle.exit, lifecycle.rpcDiscover,
  state.stateGet, state.stateApplyDefaults, state.stateSetHome, state.stateSetWorkspace, state.stateSetSource,
  state.stateSetStatusMessageID, state.stateSetInstanceID, state.stateWorkspaceRoot, state.stateSourceDir,
  state.stateQualifiedName,
  session.sessionAdd, session.sessionRemove, session.sessionFind, session.sessionList,
  session.sessionSetResumeToken, session.sessionSetPausedReason, session.sessionSetBudget,
  session.sessionSetBackendTarget, session.sessionSetArchived,
  transcript.transcriptAppend, transcript.transcriptRead, transcript.transcriptLast, transcript.transcriptRemove,
  participants.participantsAppend, participants.participantsRead, participants.participantsRemove,
] as const;

type Defs = (typeof defs)[number];

/** Method definitions by wire name. */
export type MethodTable = { [D in Defs as D['method']]: D };
export type MethodName = keyof MethodTable;

export const methods = Object.fromEntries(defs.map((d) => [d.method, d])) as unknown as MethodTable;
export const methodList: readonly MethodDef[] = defs;
