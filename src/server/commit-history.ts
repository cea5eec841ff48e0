// The state commits a returning subscriber may be replayed: each commit's row changes (per name,
// as session/didChange tells them) and changed top-level fields (state/didChange), the latest
// MAX_REPLAY_REVISIONS commits and at most MAX_REPLAY_ROW_CHANGES row changes kept. Older means
// state/resync with the whole document.
import { stringifyExactJson } from '../common/exact-json.js';
import type { Session, StateDocument } from '../protocol/model.js';
import { MAX_REPLAY_REVISIONS, MAX_REPLAY_ROW_CHANGES } from './feed-limits.js';

/** The changes of one state commit, as session/didChange and state/didChange tell them. */
export interface Commit {
  revision: number;
  rows: RowChange[];
  fields: string[];
}

export class CommitHistory {
  /** Oldest first. */
  private readonly commits: Commit[] = [];
  private rows = 0;

  /** The changes of the commit `before` → `after` at `revision`, kept for replay. */
  record(revision: number, before: StateDocument, after: StateDocument): Commit {
    const fields = Object.keys({ ...before, ...after }).filter((k) => k !== 'sessions' && !sameField(before[k], after[k]));
    const rows = diffSessions(before.sessions ?? [], after.sessions ?? []);
    // A whole-document save can reorder rows or change a name's second row: then the per-name
    // events do not rebuild the rows, and "sessions" tells a replica to read them again.
    if (!rowsFollow(before.sessions, after.sessions, rows)) fields.push('sessions');
    const c = { revision, rows, fields };
    this.commits.push(c);
    this.rows += rows.length;
    while (this.commits.length > MAX_REPLAY_REVISIONS || (this.rows > MAX_REPLAY_ROW_CHANGES && this.commits.length > 1)) {
      this.rows -= this.commits.shift()!.rows.length;
    }
    return c;
  }

  /** The commits after `seen` up to `now`, or undefined when the kept ones do not reach back to `seen` (or `seen` is ahead of `now`). */
  since(seen: number, now: number): Commit[] | undefined {
    const first = this.commits[0]?.revision ?? now + 1;
    if (seen > now || (seen !== now && first > seen + 1)) return undefined;
    return this.commits.filter((c) => c.revision > seen && c.revision <= now);
  }
}

function sameField(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  return stringifyExactJson(a) === stringifyExactJson(b);
}

export type RowChange = { kind: 'added' | 'updated' | 'removed'; name: string; session?: Session };

/** Row changes by name (first row of a name, as FindSession); unchanged rows keep their identity. */
function diffSessions(before: readonly Session[], after: readonly Session[]): RowChange[] {
  return diffInPlace(before, after) ?? diffByName(before, after);
}

/**
 * The same changes, for the common commit that replaced rows where they stood (setters, patches):
 * one pass of identity checks instead of two maps of every name, or undefined when a row moved,
 * came or went. With the names the same at every index, a name's first row is at the same index
 * on both sides, so a replaced row is an update exactly when no row before it has its name.
 */
function diffInPlace(before: readonly Session[], after: readonly Session[]): RowChange[] | undefined {
  if (before.length !== after.length) return undefined;
  const replaced: number[] = [];
  for (let i = 0; i < after.length; i++) {
    const a = after[i] as Session;
    const b = before[i] as Session;
    if (a === b) continue;
    if (a.name !== b.name) return undefined;
    replaced.push(i);
  }
  if (replaced.length === 0) return [];
  const names = new Set(replaced.map((i) => (after[i] as Session).name));
  const first = new Map<string, number>();
  const last = replaced[replaced.length - 1] as number;
  for (let i = 0; i <= last; i++) {
    const name = (after[i] as Session).name;
    if (names.has(name) && !first.has(name)) first.set(name, i);
  }
  const out: RowChange[] = [];
  for (const i of replaced) {
    const row = after[i] as Session;
    if (first.get(row.name) === i) out.push({ kind: 'updated', name: row.name, session: row });
  }
  return out;
}

function diffByName(before: readonly Session[], after: readonly Session[]): RowChange[] {
  const firstByName = (rows: readonly Session[]) => {
    const m = new Map<string, Session>();
    for (const r of rows) if (!m.has(r.name)) m.set(r.name, r);
    return m;
  };
  const b = firstByName(before);
  const a = firstByName(after);
  const out: RowChange[] = [];
  for (const [name, row] of a) {
    const old = b.get(name);
    if (!old) out.push({ kind: 'added', name, session: row });
    else if (old !== row) out.push({ kind: 'updated', name, session: row });
  }
  for (const name of b.keys()) if (!a.has(name)) out.push({ kind: 'removed', name });
  return out;
}

/**
 * Whether `changes` applied to `before` (removed names dropped, a name's first row replaced,
 * added rows appended, as the session methods do) give exactly `after`, row for row. O(rows),
 * as the diff before it.
 */
function rowsFollow(before: readonly Session[] | null, after: readonly Session[] | null, changes: readonly RowChange[]): boolean {
  // null and [] are written differently ("sessions": null / []); no row event tells them apart.
  if (before !== null && after === null) return false;
  if (before === null && after !== null && after.length === 0) return false;
  const removed = new Set<string>();
  const updated = new Map<string, Session | undefined>();
  const added: Session[] = [];
  for (const c of changes) {
    if (c.kind === 'removed') removed.add(c.name);
    else if (c.kind === 'updated') updated.set(c.name, c.session);
    else if (c.session) added.push(c.session);
  }
  const rows = after ?? [];
  let i = 0;
  const replaced = new Set<string>();
  for (const r of before ?? []) {
    if (removed.has(r.name)) continue;
    let expected: Session | undefined = r;
    if (updated.has(r.name) && !replaced.has(r.name)) {
      expected = updated.get(r.name);
      replaced.add(r.name);
    }
    if (rows[i++] !== expected) return false;
  }
  for (const r of added) if (rows[i++] !== r) return false;
  return i === rows.length;
}
