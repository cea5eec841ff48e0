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
import { ErrorCodes } from '../protocol/errors.js';
import type { StateDocument, TranscriptEntry } from '../protocol/model.js';
import type { NotificationName, NotificationTable } from '../protocol/table.js';
import type { watchSubscribe } from '../protocol/watch.js';
import { CatchUpPages } from './catch-up-pages.js';
import { CommitHistory } from './commit-history.js';
import type { CatchUpCounters, CatchUpObserver, FeedPage, FeedSource, NotificationSink, Subscribed, SubscriptionLimits } from './feed-limits.js';
import { CATCH_UP_DRAINED_BYTES, CATCH_UP_PAGE_ENTRIES, MAX_PENDING_BYTES, MAX_PENDING_BYTES_IN_TOTAL, MAX_PENDING_BYTES_WHEN_CROWDED, MAX_PENDING_NOTIFICATIONS, MAX_SUBSCRIPTIONS_PER_CONNECTION } from './feed-limits.js';

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

const names = (v: Filter['transcripts']): Subscription['transcripts'] => (v === '*' ? '*' : v ? new Set(v) : undefined);
const matches = (f: Subscription['transcripts'], name: string): boolean => f === '*' || (f !== undefined && f.has(name));

type Params<N extends NotificationName> = z.input<NotificationTable[N]['params']>;

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
  private readonly history = new CommitHistory();
  private closed = false;
  private signalClosed!: () => void;
  /** Resolves once close() was called: a catch-up waiting for its connection stops waiting. */
  private readonly whenClosed = new Promise<void>((resolve) => (this.signalClosed = resolve));
  private readonly endWaiters: (() => void)[] = [];
  private readonly observer: CatchUpObserver | undefined;
  private readonly pages: CatchUpPages;
  /** What catching up holds now and has done. */
  get catchUp(): CatchUpCounters {
    return this.pages.counters;
  }

  constructor(
    limits: SubscriptionLimits = {},
    private readonly source?: FeedSource,
  ) {
    this.pendingBytesInTotal = limits.pendingBytesInTotal ?? MAX_PENDING_BYTES_IN_TOTAL;
    this.pendingBytes = limits.pendingBytes ?? MAX_PENDING_BYTES;
    this.pendingNotifications = limits.pendingNotifications ?? MAX_PENDING_NOTIFICATIONS;
    this.observer = limits.observer;
    this.pages = new CatchUpPages(source, limits.observer);
  }

  /**
   * Ends every catch-up at its next step (the server is stopping): none reads another page, one
   * waiting for its connection stops waiting. Resolves once all are over (a page being read is
   * finished first: bounded by one page each).
   */
  close(): Promise<void> {
    this.closed = true;
    this.signalClosed();
    this.pages.close();
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
    const { rows: rowChanges, fields } = this.history.record(revision, before, after);
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

  /**
   * The state notifications a subscriber that saw `seen` is owed: the kept commits after it when
   * they reach back that far in this epoch, else one state/resync with the document now.
   */
  private stateSince(s: Subscription, epoch: string | undefined, seen: number, now: number): Held[] {
    const commits = epoch === this.epoch ? this.history.since(seen, now) : undefined;
    if (commits) {
      const out: Held[] = [];
      for (const c of commits) {
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
          // Waiting for the connection, reading and sending are one turn of the connection: its
          // other subscriptions' pages wait, so it is sent one page at a time.
          const from = c.next;
          const page = await this.pages.inTurn(s.sink, async () => {
            await this.drained(s);
            if (!open()) return undefined;
            const p = await this.pages.read(s.id, name, from, cursor);
            if (p) this.sendPage(s, name, p, !open() || (first && p.end <= seen));
            return p;
          });
          if (!page || !open()) return;
          // A file whose next seq is at or below what the subscriber saw was removed and began
          // again (seq restarts at 0): all of it is new to the subscriber (nothing was sent).
          if (first && page.end <= seen) {
            first = false;
            c.next = 0;
            cursor = undefined;
            continue;
          }
          first = false;
          if (page.entries.length > 0) {
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

  /** Hands a page's entries to the connection (each checked against the bounds, as live ones are); `drop`: none, the page is let go. */
  private sendPage(s: Subscription, name: string, page: FeedPage, drop = false): void {
    try {
      for (let i = 0; i < page.entries.length && !drop; i++) {
        if (this.subs.get(s.id) !== s) return;
        this.deliver(s, { method: 'transcript/didAppend', params: { subscription: s.id, name, seq: page.firstSeq + i, entry: page.entries[i]! } }, this.crowded());
      }
    } finally {
      this.pages.released(page);
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
