// The change feed: subscriptions per connection, fed by the store's commit events (which fire
// only once a change is in the file, in commit order). Sending never waits: a connection that
// stops reading builds up unsent notifications until a bound, counted in encoded bytes across
// all its subscriptions; then each of its subscriptions gets watch/overflow and is dropped, so
// writers and other clients never notice it and memory stays bounded.
//
// A subscriber that comes back passes `since` (what it saw last). Its live notifications are then
// held while what it missed is sent: the state changes since its revision (kept here for the last
// MAX_REPLAY_REVISIONS commits of this run, the epoch), or one state/resync with the document;
// then each transcript's entries after its seq, read from the file. Held live entries the file
// read already had are dropped by seq, so the subscriber sees each change once, in order.
import { randomUUID } from 'node:crypto';
import { ResponseError } from 'vscode-jsonrpc/node';
import type * as z from 'zod';
import { stringifyExactJson } from '../common/exact-json.js';
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
/** State commits whose changes a returning subscriber can be replayed; older means state/resync. */
export const MAX_REPLAY_REVISIONS = 1024;
/** Row changes kept for replay, all kept commits together (a commit that touched many rows ages out sooner). */
export const MAX_REPLAY_ROW_CHANGES = 8192;
/** Notifications sent while catching up before waiting for the connection to take them. */
const CATCH_UP_BATCH = 256;

export interface NotificationSink {
  /** Sends a notification; never throws (drops it when the connection is closed). */
  notify(method: string, params: unknown): void;
  /** Encoded bytes written to the connection and not yet handed to the OS. */
  unsentBytes(): number;
  /** Messages written to the connection and not yet handed to the OS. */
  unsentFrames(): number;
  readonly isClosed: boolean;
  /** Resolves once at most `bytes` are unsent (catching up waits on it instead of overflowing). */
  whenUnsentAtMost?(bytes: number): Promise<void>;
}

/** What catching up reads: the store as it is now. */
export interface FeedSource {
  /** The state revision now. */
  readonly revision: number;
  /** The run the revisions belong to (the store's); a feed without one makes its own. */
  readonly epoch?: string;
  /** The state document now (what state/get answers). */
  document(): StateDocument;
  /**
   * The entries of `name` from seq `from` on, in order, as far as the file still has them
   * (compaction may have dropped the oldest: then `firstSeq` > `from`); `end` is the seq the next
   * append will get.
   */
  entriesFrom(name: string, from: number): Promise<{ firstSeq: number; entries: TranscriptEntry[]; end: number }>;
  /** Where a failure with no caller to tell goes (the server's log). */
  error(message: string, err: unknown): void;
}

/** What watch/subscribe answers. */
export interface Subscribed {
  subscription: string;
  revision: number;
  epoch: string;
}

type Filter = z.output<(typeof watchSubscribe)['params']>;

interface Subscription {
  readonly id: string;
  readonly sink: NotificationSink;
  readonly sessions: boolean;
  readonly transcripts: '*' | ReadonlySet<string> | undefined;
  readonly participants: '*' | ReadonlySet<string> | undefined;
  /** Live notifications held while what the subscriber missed is sent (only then). */
  held?: Held[];
}

type Held = { [N in NotificationName]: { method: N; params: Params<N> } }[NotificationName];

/** The changes of one state commit, as session/didChange and state/didChange tell them. */
interface Commit {
  revision: number;
  rows: RowChange[];
  fields: string[];
}

const names = (v: Filter['transcripts']): Subscription['transcripts'] => (v === '*' ? '*' : v ? new Set(v) : undefined);
const matches = (f: Subscription['transcripts'], name: string): boolean => f === '*' || (f !== undefined && f.has(name));

type Params<N extends NotificationName> = z.input<NotificationTable[N]['params']>;

export interface SubscriptionLimits {
  /** MAX_PENDING_BYTES_IN_TOTAL by default (tests go lower). */
  readonly pendingBytesInTotal?: number;
  /** MAX_PENDING_BYTES by default (tests go lower, so a test passes the bound with less data). */
  readonly pendingBytes?: number;
  /** MAX_PENDING_NOTIFICATIONS by default (tests go lower). */
  readonly pendingNotifications?: number;
}

export class Subscriptions {
  private readonly subs = new Map<string, Subscription>();
  private readonly bySink = new Map<NotificationSink, Set<string>>();
  private next = 1;
  private readonly pendingBytesInTotal: number;
  private readonly pendingBytes: number;
  private readonly pendingNotifications: number;
  /** The store's run: revisions count from 0 again in the next one. */
  get epoch(): string {
    return this.source?.epoch ?? this.ownEpoch;
  }
  private readonly ownEpoch = randomUUID();
  /** The latest commits, oldest first, for replay to a returning subscriber. */
  private readonly history: Commit[] = [];
  private historyRows = 0;

  constructor(
    limits: SubscriptionLimits = {},
    private readonly source?: FeedSource,
  ) {
    this.pendingBytesInTotal = limits.pendingBytesInTotal ?? MAX_PENDING_BYTES_IN_TOTAL;
    this.pendingBytes = limits.pendingBytes ?? MAX_PENDING_BYTES;
    this.pendingNotifications = limits.pendingNotifications ?? MAX_PENDING_NOTIFICATIONS;
  }

  /**
   * Subscribes `sink` (see add). With `since`, what it missed is sent first, starting once the
   * reply is on its way (the next turn of the event loop), and live notifications wait for it.
   */
  subscribe(sink: NotificationSink, filter: Filter): Subscribed {
    const subscription = this.add(sink, filter);
    const revision = this.source?.revision ?? 0;
    const since = filter.since;
    if (!since) return { subscription, revision, epoch: this.epoch };
    const s = this.subs.get(subscription)!;
    s.held = [];
    // The state part is decided now, against the revision just answered; later commits are held.
    const preface: Held[] = s.sessions && since.revision !== undefined ? this.stateSince(s, since.epoch, since.revision, revision) : [];
    const names = Object.entries(since.transcripts ?? {}).filter(([name]) => matches(s.transcripts, name));
    setImmediate(() => void this.catchUp(s, preface, names));
    return { subscription, revision, epoch: this.epoch };
  }

  /** Subscribes `sink`; refused (-32600) past MAX_SUBSCRIPTIONS_PER_CONNECTION or once it closed. */
  add(sink: NotificationSink, filter: Filter): string {
    // A subscribe queued behind the connection's close would otherwise outlive it, holding its feed.
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
    // Recorded with or without watchers: a subscriber may come back for them.
    const fields = Object.keys({ ...before, ...after }).filter((k) => k !== 'sessions' && !sameField(before[k], after[k]));
    const rowChanges = diffSessions(before.sessions ?? [], after.sessions ?? []);
    // A whole-document save can reorder rows or change a name's second row: then the per-name
    // events do not rebuild the rows, and "sessions" tells a replica to read them again.
    if (!rowsFollow(before.sessions, after.sessions, rowChanges)) fields.push('sessions');
    this.remember({ revision, rows: rowChanges, fields });
    const watchers = [...this.subs.values()].filter((s) => s.sessions);
    if (watchers.length === 0) return;
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

  private remember(c: Commit): void {
    this.history.push(c);
    this.historyRows += c.rows.length;
    while (this.history.length > MAX_REPLAY_REVISIONS || (this.historyRows > MAX_REPLAY_ROW_CHANGES && this.history.length > 1)) {
      this.historyRows -= this.history.shift()!.rows.length;
    }
  }

  /**
   * The state notifications a subscriber that saw `seen` is owed: the kept commits after it when
   * they reach back that far in this epoch, else one state/resync with the document now.
   */
  private stateSince(s: Subscription, epoch: string | undefined, seen: number, now: number): Held[] {
    const first = this.history[0]?.revision ?? now + 1;
    if (epoch === this.epoch && seen <= now && (seen === now || first <= seen + 1)) {
      const out: Held[] = [];
      for (const c of this.history) {
        if (c.revision <= seen || c.revision > now) continue;
        for (const r of c.rows) out.push({ method: 'session/didChange', params: { subscription: s.id, revision: c.revision, ...r } });
        if (c.fields.length) out.push({ method: 'state/didChange', params: { subscription: s.id, revision: c.revision, fields: c.fields } });
      }
      return out;
    }
    if (!this.source) return [];
    return [{ method: 'state/resync', params: { subscription: s.id, revision: now, epoch: this.epoch, state: this.source.document() } }];
  }

  /**
   * Sends `s` what it missed, then what was held meanwhile, then lets live notifications through.
   * Waits for the connection to take each batch, so a long backlog never overflows it; a read that
   * fails ends the subscription with watch/overflow (subscribe again), and is logged.
   */
  private async catchUp(s: Subscription, preface: Held[], names: [string, number][]): Promise<void> {
    const open = (): boolean => this.subs.get(s.id) === s;
    const ends = new Map<string, number>();
    let sent = 0;
    const pace = async (): Promise<void> => {
      if (++sent % CATCH_UP_BATCH === 0) await s.sink.whenUnsentAtMost?.(MAX_PENDING_BYTES_WHEN_CROWDED);
    };
    try {
      for (const h of preface) {
        if (!open()) return;
        this.deliver(s, h, this.crowded());
        await pace();
      }
      for (const [name, seen] of names) {
        if (!open() || !this.source) return;
        const got = await this.source.entriesFrom(name, seen + 1);
        // A file whose next seq is at or below what the subscriber saw was removed and began
        // again (seq restarts at 0): all of it is new to the subscriber.
        const from = got.end <= seen ? got.firstSeq : seen + 1;
        ends.set(name, got.end);
        for (let i = 0; i < got.entries.length; i++) {
          const seq = got.firstSeq + i;
          if (seq < from) continue;
          if (!open()) return;
          this.deliver(s, { method: 'transcript/didAppend', params: { subscription: s.id, name, seq, entry: got.entries[i]! } }, this.crowded());
          await pace();
        }
      }
    } catch (err) {
      this.source?.error(`watch/subscribe: what subscription ${s.id} missed could not be read; it gets watch/overflow`, err);
      if (open()) {
        this.drop(s);
        s.sink.notify('watch/overflow', { subscription: s.id } satisfies Params<'watch/overflow'>);
      }
      return;
    }
    if (!open()) return;
    const held = s.held ?? [];
    s.held = undefined;
    const crowded = this.crowded();
    for (const h of held) {
      // Appended after the subscription began and already sent from the file.
      if (h.method === 'transcript/didAppend' && h.params.seq < (ends.get(h.params.name) ?? -1)) continue;
      if (!open()) return;
      this.deliver(s, h, crowded);
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
    if (s.held) {
      if (s.held.length >= this.pendingNotifications) {
        this.drop(s);
        s.sink.notify('watch/overflow', { subscription: s.id } satisfies Params<'watch/overflow'>);
        return;
      }
      s.held.push({ method, params } as Held);
      return;
    }
    this.deliver(s, { method, params } as Held, crowded);
  }

  private deliver(s: Subscription, { method, params }: Held, crowded: boolean): void {
    const sink = s.sink;
    if (sink.isClosed) {
      this.drop(s);
      return;
    }
    const unsent = sink.unsentBytes();
    if (unsent > this.pendingBytes || sink.unsentFrames() >= this.pendingNotifications || (crowded && unsent > MAX_PENDING_BYTES_WHEN_CROWDED)) {
      this.drop(s);
      sink.notify('watch/overflow', { subscription: s.id } satisfies Params<'watch/overflow'>);
      return;
    }
    sink.notify(method, params);
  }
}

function sameField(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  return stringifyExactJson(a) === stringifyExactJson(b);
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
