// The change feed: subscriptions per connection, fed by the store's commit events (which fire
// only once a change is in the file, in commit order). Sending never waits: a connection that
// stops reading builds up unsent notifications until a bound, counted in encoded bytes across
// all its subscriptions; then each of its subscriptions gets watch/overflow and is dropped, so
// writers and other clients never notice it and memory stays bounded.
import { ResponseError } from 'vscode-jsonrpc/node';
import type { z } from 'zod';
import { ErrorCodes } from '../protocol/errors.js';
import type { Session, StateDocument, TranscriptEntry } from '../protocol/model.js';
import type { NotificationName, NotificationTable } from '../protocol/table.js';
import type { watchSubscribe } from '../protocol/watch.js';

/** Unsent messages a connection may have before its subscriptions overflow (each costs Node
 *  some bookkeeping beyond its bytes, so tiny notifications are bounded by count too). */
export const MAX_PENDING_NOTIFICATIONS = 4096;
/**
 * Encoded bytes (what goes on the wire: escapes, multi-byte UTF-8, framing) a connection may have
 * unsent before its subscriptions overflow. Counted over everything unsent on the connection, so
 * 32 subscriptions share one bound; one notification may pass it (it is already in memory).
 */
export const MAX_PENDING_BYTES = 16 * 1024 * 1024;
/**
 * Encoded bytes unsent on all subscribed connections together past which the feed is crowded:
 * then a connection holding more than MAX_PENDING_BYTES_WHEN_CROWDED unsent gets watch/overflow
 * at its next notification, whatever its own bound says. 16 stalled subscribers could otherwise
 * hold 16 × 16 MiB; with this, the feed holds at most this plus 1 MiB per connection.
 */
export const MAX_PENDING_BYTES_IN_TOTAL = 128 * 1024 * 1024;
/** What one connection may hold unsent while the feed is crowded (a prompt reader holds ~0). */
export const MAX_PENDING_BYTES_WHEN_CROWDED = 1024 * 1024;
/** Subscriptions one connection may hold; one more is refused with -32600. */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 64;

export interface NotificationSink {
  /** Sends a notification; never throws (drops it when the connection is closed). */
  notify(method: string, params: unknown): void;
  /** Encoded bytes written to the connection and not yet handed to the OS. */
  unsentBytes(): number;
  /** Messages written to the connection and not yet handed to the OS. */
  unsentFrames(): number;
  readonly isClosed: boolean;
}

type Filter = z.output<(typeof watchSubscribe)['params']>;

interface Subscription {
  readonly id: string;
  readonly sink: NotificationSink;
  readonly sessions: boolean;
  readonly transcripts: '*' | ReadonlySet<string> | undefined;
  readonly participants: '*' | ReadonlySet<string> | undefined;
}

const names = (v: Filter['transcripts']): Subscription['transcripts'] => (v === '*' ? '*' : v ? new Set(v) : undefined);
const matches = (f: Subscription['transcripts'], name: string): boolean => f === '*' || (f !== undefined && f.has(name));

type Params<N extends NotificationName> = z.input<NotificationTable[N]['params']>;

export interface SubscriptionLimits {
  /** MAX_PENDING_BYTES_IN_TOTAL by default (tests go lower). */
  readonly pendingBytesInTotal?: number;
}

export class Subscriptions {
  private readonly subs = new Map<string, Subscription>();
  private readonly bySink = new Map<NotificationSink, Set<string>>();
  private next = 1;
  private readonly pendingBytesInTotal: number;

  constructor(limits: SubscriptionLimits = {}) {
    this.pendingBytesInTotal = limits.pendingBytesInTotal ?? MAX_PENDING_BYTES_IN_TOTAL;
  }

  /** Subscribes `sink`; refused (-32600) past MAX_SUBSCRIPTIONS_PER_CONNECTION or once it closed. */
  add(sink: NotificationSink, filter: Filter): string {
    // A subscribe queued behind the connection's close would otherwise outlive it (issue 10).
    if (sink.isClosed) throw new ResponseError(ErrorCodes.InvalidRequest, 'the connection is closed; nothing can be subscribed on it');
    const mine = this.bySink.get(sink) ?? new Set<string>();
    if (mine.size >= MAX_SUBSCRIPTIONS_PER_CONNECTION) {
      throw new ResponseError(
        ErrorCodes.InvalidRequest,
        `a connection may hold at most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions; unsubscribe one first. Got ${mine.size} open`,
      );
    }
    const id = `w${this.next++}`;
    this.subs.set(id, { id, sink, sessions: filter.sessions ?? false, transcripts: names(filter.transcripts), participants: names(filter.participants) });
    mine.add(id);
    this.bySink.set(sink, mine);
    return id;
  }

  /** Ends `id` if `sink` owns it. */
  remove(sink: NotificationSink, id: string): boolean {
    const s = this.subs.get(id);
    if (!s || s.sink !== sink) return false;
    this.drop(s);
    return true;
  }

  /** Ends every subscription of a connection (it closed). */
  removeAll(sink: NotificationSink): void {
    for (const id of this.bySink.get(sink) ?? []) this.subs.delete(id);
    this.bySink.delete(sink);
  }

  /** Subscriptions open, all connections together. */
  get size(): number {
    return this.subs.size;
  }

  /** Subscriptions `sink` holds. */
  countOf(sink: NotificationSink): number {
    return this.bySink.get(sink)?.size ?? 0;
  }

  stateCommitted(revision: number, before: StateDocument, after: StateDocument): void {
    const watchers = [...this.subs.values()].filter((s) => s.sessions);
    if (watchers.length === 0) return;
    const fields = Object.keys({ ...before, ...after }).filter((k) => k !== 'sessions' && !sameField(before[k], after[k]));
    const rowChanges = diffSessions(before.sessions ?? [], after.sessions ?? []);
    // A whole-document save can reorder rows or change a name's second row: then the per-name
    // events do not rebuild the rows, and "sessions" tells a replica to read them again.
    if (!rowsFollow(before.sessions, after.sessions, rowChanges)) fields.push('sessions');
    const crowded = this.crowded();
    for (const s of watchers) {
      for (const c of rowChanges) this.send(s, 'session/didChange', { subscription: s.id, revision, ...c }, crowded);
      if (fields.length) this.send(s, 'state/didChange', { subscription: s.id, revision, fields }, crowded);
    }
  }

  transcriptAppended(name: string, seq: number, entry: TranscriptEntry): void {
    if (this.subs.size === 0) return;
    const crowded = this.crowded();
    for (const s of this.subs.values()) {
      if (matches(s.transcripts, name)) this.send(s, 'transcript/didAppend', { subscription: s.id, name, seq, entry }, crowded);
    }
  }

  participantAdded(name: string, userId: string): void {
    if (this.subs.size === 0) return;
    const crowded = this.crowded();
    for (const s of this.subs.values()) {
      if (matches(s.participants, name)) this.send(s, 'participants/didAdd', { subscription: s.id, name, userId }, crowded);
    }
  }

  /** Whether the subscribed connections together hold more unsent bytes than the total bound. */
  private crowded(): boolean {
    let total = 0;
    for (const sink of this.bySink.keys()) total += sink.unsentBytes();
    return total > this.pendingBytesInTotal;
  }

  private drop(s: Subscription): void {
    this.subs.delete(s.id);
    const mine = this.bySink.get(s.sink);
    mine?.delete(s.id);
    if (mine?.size === 0) this.bySink.delete(s.sink);
  }

  /** Called from the store's commit events: must never throw into the store. */
  private send<N extends NotificationName>(s: Subscription, method: N, params: Params<N>, crowded: boolean): void {
    const sink = s.sink;
    if (sink.isClosed) {
      this.drop(s);
      return;
    }
    const unsent = sink.unsentBytes();
    if (unsent > MAX_PENDING_BYTES || sink.unsentFrames() >= MAX_PENDING_NOTIFICATIONS || (crowded && unsent > MAX_PENDING_BYTES_WHEN_CROWDED)) {
      this.drop(s);
      sink.notify('watch/overflow', { subscription: s.id } satisfies Params<'watch/overflow'>);
      return;
    }
    sink.notify(method, params);
  }
}

function sameField(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  return JSON.stringify(a) === JSON.stringify(b);
}

type RowChange = { kind: 'added' | 'updated' | 'removed'; name: string; session?: Session };

/** Row changes by name (first row of a name, as FindSession); unchanged rows keep their identity. */
function diffSessions(before: readonly Session[], after: readonly Session[]): RowChange[] {
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
