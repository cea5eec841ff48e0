// The state document as immutable values: the document read from disk, the effective document
// (config defaults), and every row and field mutation as a pure function from one document to
// the next. Ids and load-time backfills: session-ids.ts; what a row must be: row-checks.ts; a
// whole-document save: state-replace.ts. Persisting and queueing live in state-store.ts.
import type { HomeRef, NewSession, Session, StateDocument } from '../protocol/model.js';
import { wellFormed } from './go-text.js';
import { assertKeptExactly, dropZeroes, encodable, ROW_ZERO, sameValue } from './row-checks.js';
import { newIncarnation, newSessionID } from './session-ids.js';
import { SessionIndex } from './session-index.js';
import { StoreError } from './store-error.js';

export type Doc = StateDocument;
type Row = Session;

/** A document with no sessions ever: `home` present, `sessions` null, as Go's NewState. */
export function emptyDocument(): Doc {
  return { home: { id: '', type: '' }, sessions: null };
}

/** Normalises a decoded state.json into a Doc: `home` always present, `sessions` null when absent. */
export function fromDecoded(decoded: Record<string, unknown>): Doc {
  const home = (decoded.home as HomeRef | undefined) ?? { id: '', type: '' };
  return {
    ...decoded,
    home: { id: home.id ?? '', type: home.type ?? '' },
    sessions: (decoded.sessions as Row[] | undefined)?.map((r) => ({ ...ROW_ZERO, ...(r as object) }) as Row) ?? null,
  } as Doc;
}

export interface Defaults {
  home?: HomeRef;
  workspace?: string;
  source?: string;
}

/**
 * The effective document: config defaults seeded only where the file has nothing, as Go's
 * ApplyDefaults. Unlike Go, the overlay is never written to state.json.
 */
export function withDefaults(doc: Doc, d: Defaults): Doc {
  const home = doc.home.id === '' && d.home && d.home.id !== '' ? d.home : doc.home;
  const workspace = doc.workspace ? doc.workspace : d.workspace;
  const source = doc.source ? doc.source : d.source;
  if (home === doc.home && workspace === doc.workspace && source === doc.source) return doc;
  const out: Doc = { ...doc, home };
  if (workspace) out.workspace = workspace;
  if (source) out.source = source;
  return out;
}

/** Merges new defaults into earlier ones without overriding them, as repeated ApplyDefaults calls. */
export function mergeDefaults(prev: Defaults, next: Defaults): Defaults {
  return {
    home: prev.home && prev.home.id !== '' ? prev.home : next.home && next.home.id !== '' ? next.home : prev.home,
    workspace: prev.workspace || next.workspace || undefined,
    source: prev.source || next.source || undefined,
  };
}

/** What a mutation yields: the next document (the same object when nothing changed) and a result. */
export interface Outcome<R> {
  doc: Doc;
  result: R;
}

type TopField = 'workspace' | 'source' | 'statusMessageID' | 'instanceID';

/** Sets one top-level string; the empty string removes it (Go's omitempty). */
export function setTopField(doc: Doc, key: TopField, raw: string): Outcome<{ changed: boolean }> {
  const value = wellFormed(raw);
  if ((doc[key] ?? '') === value) return { doc, result: { changed: false } };
  const next: Doc = { ...doc };
  if (value === '') delete next[key];
  else next[key] = value;
  return { doc: next, result: { changed: true } };
}

export function setHome(doc: Doc, raw: HomeRef): Outcome<{ changed: boolean }> {
  const home = wellFormed(raw);
  if (doc.home.id === home.id && doc.home.type === home.type) return { doc, result: { changed: false } };
  return { doc: { ...doc, home: { id: home.id, type: home.type } }, result: { changed: true } };
}

/**
 * Go's AddSession: refuses a taken name, keeps a caller's id (even a duplicate, as Go), else
 * assigns `s_<name>[_N]`; always a fresh incarnation, so a re-created name is a new lifetime.
 * The name check and both picks ask the rows' SessionIndex, so an add does not walk the rows
 * (what is left is copying the array of row references, as copy-on-write must).
 */
export function addSession(doc: Doc, session: NewSession): Outcome<{ session: Session }> {
  assertKeptExactly(session);
  const rows = doc.sessions ?? [];
  const index = SessionIndex.of(rows);
  if (index.names.has(session.name)) {
    throw new StoreError('exists', `session ${goQuote(session.name)} already exists`);
  }
  const id = session.id ? session.id : newSessionID(session.name, index.ids);
  const incarnation = newIncarnation(index.incarnations);
  const row = encodable(dropZeroes(wellFormed({ ...session, id, incarnation }) as Row));
  // concat, not a spread: one block copy, about 4 × faster at 20 000 rows.
  const next = rows.concat([row]);
  SessionIndex.handOver(rows, next, [], [row]);
  return { doc: { ...doc, sessions: next }, result: { session: row } };
}

/** Removes every row with that name; `sessions` becomes [] (not null) once it had rows, as Go. */
export function removeSession(doc: Doc, name: string): Outcome<{ removed: boolean }> {
  const rows = doc.sessions;
  if (!rows || !rows.some((r) => r.name === name)) return { doc, result: { removed: false } };
  const next = rows.filter((r) => r.name !== name);
  SessionIndex.handOver(rows, next, rows.filter((r) => r.name === name), []);
  return { doc: { ...doc, sessions: next }, result: { removed: true } };
}

/** The first row with that name, as Go's FindSession. */
export function findSession(doc: Doc, name: string): Session | undefined {
  return doc.sessions ? SessionIndex.of(doc.sessions).find(name) : undefined;
}

/** Throws a conflict when `expected` is given and is not the named row's incarnation. */
export function checkIncarnation(doc: Doc, name: string, expected: string | undefined): void {
  if (expected === undefined) return;
  const row = findSession(doc, name);
  const current = row ? (row.incarnation ?? '') : null;
  if (current !== expected) {
    throw new StoreError('conflict', row ? `session ${goQuote(name)} is incarnation ${current}, not ${expected}`
      : `session ${goQuote(name)} no longer exists`, { incarnation: current });
  }
}

/**
 * Patches the first row with that name. Missing row: `found:false`, nothing written (as Go).
 * Unlike Go's SetBudget and SetBackendTarget, a patch that changes nothing writes nothing.
 */
export function patchSession(doc: Doc, name: string, raw: Partial<Session>): Outcome<{ found: boolean; changed: boolean }> {
  const patch = wellFormed(raw);
  const rows = doc.sessions ?? [];
  const i = rows.findIndex((r) => r.name === name);
  if (i < 0) return { doc, result: { found: false, changed: false } };
  const row = rows[i] as Row;
  const changed = Object.entries(patch).some(([k, v]) => !sameValue(row[k], v));
  if (!changed) return { doc, result: { found: true, changed: false } };
  const next = [...rows];
  const patched = encodable(dropZeroes({ ...row, ...patch } as Row));
  next[i] = patched;
  SessionIndex.handOver(rows, next, [row], [patched]);
  return { doc: { ...doc, sessions: next }, result: { found: true, changed: true } };
}

/** Go's `%q` for the names in our messages (quotes and escapes like strconv.Quote for ASCII). */
export function goQuote(s: string): string {
  return JSON.stringify(s);
}
