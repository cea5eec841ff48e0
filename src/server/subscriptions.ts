// The change feed: subscriptions per connection, fed by the store's commit events (which fire
// only once a change is in the file, in commit order). Sending never waits: a connection that
// stops reading builds up unsent notifications until a bound, counted in encoded bytes across
// all its subscriptions; then each of its subscriptions gets watch/overflow and is dropped, so
// writers and other clients never notice it and memory stays bounded.
//
// A subscriber that comes back passes `since` (what it saw last). What it missed is sent first:
// the state changes since its revision (kept here for the last MAX_REPLAY_REVISIONS commits of
// this run, the epoch), or one state/resync with the document; then each transcript's entries
// after its seq, read from the file a bounded page at a time, the next page only once the
// connection has taken the last (so a slow reader holds at most a page, whatever the transcript's
// size). Meanwhile live state and participants notifications are held, and live entries of a
// transcript being caught up are not: the file has them, and the pages go on until they are sent.
// The subscriber sees each change once, in order.
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
/** Entries a catch-up page holds at most (also: replayed state notifications sent before waiting). */
export const CATCH_UP_PAGE_ENTRIES = 256;
/** Bytes of transcript lines a catch-up page holds at most (one longer entry is read whole). */
export const CATCH_UP_PAGE_BYTES = 256 * 1024;
/**
 * Unsent bytes a connection may have before its catch-up reads the next page: a page is read only
 * once the connection has taken nearly all of the last.
 */
export const CATCH_UP_DRAINED_BYTES = 64 * 1024;
/** Catch-up pages read at once, all connections together (each is parsed into memory). */
export const MAX_CATCH_UP_READS = 4;

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
   * A page of the entries of `name` from seq `from` on (at most `bounds`), oldest first, as far as
   * the file still has them (compaction may have dropped the oldest: then `firstSeq` > `from`);
   * `end` is the seq the next append will get. The `cursor` of a page, passed back with the next
   * `from`, goes on from where that page stopped.
   */
  entriesFrom(name: string, from: number, bounds: { limit: number; maxBytes: number }, cursor?: unknown): Promise<FeedPage>;
  /** Where a failure with no caller to tell goes (the server's log). */
  error(message: string, err: unknown): void;
}

/** A page of a transcript's entries, as FeedSource.entriesFrom reads it. */
export interface FeedPage {
  firstSeq: number;
  entries: TranscriptEntry[];
  end: number;
  cursor?: unknown;
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
  /** Live state and participants notifications held while what the subscriber missed is sent (only then). */
  held?: Held[];
  /** The transcripts being caught up from their files: the seq sent next, and the newest seq appended live meanwhile. */
  catching?: Map<string, { next: number; liveMax: number }>;
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
  /** Told of each catch-up step (tests order by it). */
  readonly observer?: CatchUpObserver;
}

export interface CatchUpObserver {
  /** A page of `entries` entries was read for `subscription`. */
  pageRead?(subscription: string, entries: number): void;
  /** `subscription`'s catch-up waits for its connection to take what it was sent. */
  waiting?(subscription: string): void;
  /** `subscription`'s catch-up is over (done, or ended by a close): it reads nothing more. */
  ended?(subscription: string): void;
}

/** What catching up holds now and has done (for `status`, and for tests). */
export interface CatchUpCounters {
  /** Catch-ups under way. */
  running: number;
  /** Entries read from files and not yet handed to their connection, all catch-ups together. */
  entriesInMemory: number;
  /** The most entriesInMemory has been. */
  entriesInMemoryPeak: number;
  /** Pages read since the start. */
  pages: number;
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
  private closed = false;
  private signalClosed!: () => void;
  /** Resolves once close() was called: a catch-up waiting for its connection stops waiting. */
  private readonly whenClosed = new Promise<void>((resolve) => (this.signalClosed = resolve));
  private readonly endWaiters: (() => void)[] = [];
  private readonly observer: CatchUpObserver | undefined;
  /** Per connection, the catch-up step running: one page at a time per connection. */
  private readonly turns = new Map<NotificationSink, Promise<void>>();
  private readsRunning = 0;
  private readonly readWaiters: (() => void)[] = [];
  readonly catchUp: CatchUpCounters = { running: 0, entriesInMemory: 0, entriesInMemoryPeak: 0, pages: 0 };

  constructor(
    limits: SubscriptionLimits = {},
    private readonly source?: FeedSource,
  ) {
    this.pendingBytesInTotal = limits.pendingBytesInTotal ?? MAX_PENDING_BYTES_IN_TOTAL;
    this.pendingBytes = limits.pendingBytes ?? MAX_PENDING_BYTES;
    this.pendingNotifications = limits.pendingNotifications ?? MAX_PENDING_NOTIFICATIONS;
    this.observer = limits.observer;
  }

  /**
   * Ends every catch-up at its next step (the server is stopping): none reads another page, one
   * waiting for its connection stops waiting. Resolves once all are over (a page being read is
   * finished first: bounded by one page each).
   */
  close(): Promise<void> {
    this.closed = true;
    this.signalClosed();
    for (const w of this.readWaiters.splice(0)) w();
    if (this.catchUp.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.endWaiters.push(resolve));
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
    s.catching = new Map(names.map(([name, seen]) => [name, { next: seen + 1, liveMax: -1 }]));
    this.catchUp.running++;
    setImmediate(() =>
      void this.runCatchUp(s, preface, names).finally(() => {
        this.catchUp.running--;
        this.observer?.ended?.(s.id);
        if (this.catchUp.running === 0) for (const w of this.endWaiters.splice(0)) w();
      }),
    );
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
   * Each transcript is read a page at a time, the next page once the connection has taken the
   * last, one page at a time per connection, so a long backlog never overflows it and a slow
   * reader holds one page. A read that fails ends the subscription with watch/overflow (subscribe
   * again), and is logged. Ends at its next step once the subscription or the feed is closed.
   */
  private async runCatchUp(s: Subscription, preface: Held[], names: [string, number][]): Promise<void> {
    const open = (): boolean => !this.closed && this.subs.get(s.id) === s && !s.sink.isClosed;
    try {
      for (let i = 0; i < preface.length; i++) {
        if (!open()) return;
        this.deliver(s, preface[i]!, this.crowded());
        if ((i + 1) % CATCH_UP_PAGE_ENTRIES === 0) await this.drained(s);
      }
      for (const [name, seen] of names) {
        const c = s.catching?.get(name);
        if (!c) continue;
        let cursor: unknown;
        let first = true;
        let emptyAt: number | undefined;
        for (;;) {
          if (!open()) return;
          await this.drained(s);
          const page = await this.inTurn(s.sink, () => (open() ? this.readPage(s, name, c.next, cursor) : Promise.resolve(undefined)));
          if (!page || !open()) return;
          // A file whose next seq is at or below what the subscriber saw was removed and began
          // again (seq restarts at 0): all of it is new to the subscriber.
          if (first && page.end <= seen) {
            first = false;
            c.next = 0;
            cursor = undefined;
            continue;
          }
          first = false;
          if (page.entries.length > 0) {
            this.sendPage(s, name, page);
            c.next = page.firstSeq + page.entries.length;
            cursor = page.cursor;
            continue;
          }
          // The file's end as the read found it. An entry appended since was not sent live: read
          // on for it, once (a file that lost it meanwhile, removed, has nothing more to give).
          if (c.liveMax >= c.next && emptyAt !== c.next) {
            emptyAt = c.next;
            continue;
          }
          s.catching?.delete(name);
          break;
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
    s.catching = undefined;
    const crowded = this.crowded();
    for (const h of held) {
      if (!open()) return;
      this.deliver(s, h, crowded);
    }
  }

  /** Resolves once `s`'s connection has taken nearly all it was sent (at once when it is closed). */
  private async drained(s: Subscription): Promise<void> {
    if (s.sink.unsentBytes() <= CATCH_UP_DRAINED_BYTES || !s.sink.whenUnsentAtMost) return;
    this.observer?.waiting?.(s.id);
    await Promise.race([s.sink.whenUnsentAtMost(CATCH_UP_DRAINED_BYTES), this.whenClosed]);
  }

  /** Runs `step` after the catch-up step of the same connection before it (one page at a time per connection). */
  private inTurn<T>(sink: NotificationSink, step: () => Promise<T>): Promise<T> {
    const before = this.turns.get(sink) ?? Promise.resolve();
    const run = before.then(step);
    const done = run.then(noop, noop);
    this.turns.set(sink, done);
    void done.then(() => {
      if (this.turns.get(sink) === done) this.turns.delete(sink);
    });
    return run;
  }

  /** One page, read while at most MAX_CATCH_UP_READS others are, counted while it is in memory. */
  private async readPage(s: Subscription, name: string, from: number, cursor: unknown): Promise<FeedPage | undefined> {
    if (!this.source) return undefined;
    while (this.readsRunning >= MAX_CATCH_UP_READS) {
      if (this.closed) return undefined;
      await new Promise<void>((resolve) => this.readWaiters.push(resolve));
    }
    if (this.closed) return undefined;
    this.readsRunning++;
    try {
      const page = await this.source.entriesFrom(name, from, { limit: CATCH_UP_PAGE_ENTRIES, maxBytes: CATCH_UP_PAGE_BYTES }, cursor);
      this.catchUp.pages++;
      this.catchUp.entriesInMemory += page.entries.length;
      this.catchUp.entriesInMemoryPeak = Math.max(this.catchUp.entriesInMemoryPeak, this.catchUp.entriesInMemory);
      this.observer?.pageRead?.(s.id, page.entries.length);
      return page;
    } finally {
      this.readsRunning--;
      this.readWaiters.shift()?.();
    }
  }

  /** Hands a page's entries to the connection (each checked against the bounds, as live ones are). */
  private sendPage(s: Subscription, name: string, page: FeedPage): void {
    try {
      for (let i = 0; i < page.entries.length; i++) {
        if (this.subs.get(s.id) !== s) return;
        this.deliver(s, { method: 'transcript/didAppend', params: { subscription: s.id, name, seq: page.firstSeq + i, entry: page.entries[i]! } }, this.crowded());
      }
    } finally {
      this.catchUp.entriesInMemory -= page.entries.length;
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
    if (method === 'transcript/didAppend') {
      const p = params as Params<'transcript/didAppend'>;
      const c = s.catching?.get(p.name);
      if (c) {
        // Being caught up from the file, which has it: the pages go on until it is sent.
        c.liveMax = Math.max(c.liveMax, p.seq);
        return;
      }
      // Nothing of this transcript was missed: live at once.
      if (s.held) {
        this.deliver(s, { method, params } as Held, crowded);
        return;
      }
    }
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

function noop(): void {}

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
