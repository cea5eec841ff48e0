// Who is subscribed to what, and sending to them within the bounds: the subscriptions of every
// connection, a notification handed to a connection only while it holds less unsent than its
// bounds (else its subscription gets watch/overflow and is dropped), and held meanwhile for a
// subscription whose catch-up is running. Sending never throws into the store's commit events.
import { ResponseError } from 'vscode-jsonrpc/node';
import type * as z from 'zod';
import { ErrorCodes } from '../protocol/errors.js';
import type { NotificationName, NotificationTable } from '../protocol/table.js';
import type { watchSubscribe } from '../protocol/watch.js';
import type { NotificationSink } from './feed-limits.js';
import { MAX_PENDING_BYTES_WHEN_CROWDED, MAX_SUBSCRIPTIONS_PER_CONNECTION } from './feed-limits.js';

export type Filter = z.output<(typeof watchSubscribe)['params']>;

export interface Subscription {
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

export type Held = { [N in NotificationName]: { method: N; params: Params<N> } }[NotificationName];

export type Params<N extends NotificationName> = z.input<NotificationTable[N]['params']>;

const names = (v: Filter['transcripts']): Subscription['transcripts'] => (v === '*' ? '*' : v ? new Set(v) : undefined);
export const matches = (f: Subscription['transcripts'], name: string): boolean => f === '*' || (f !== undefined && f.has(name));

/** The bounds a connection's unsent notifications are held to (feed-limits.ts has the defaults). */
export interface PendingBounds {
  pendingBytesInTotal: number;
  pendingBytes: number;
  pendingNotifications: number;
}

export class SubscriptionTable {
  private readonly subs = new Map<string, Subscription>();
  private readonly bySink = new Map<NotificationSink, Set<string>>();
  private next = 1;

  constructor(private readonly bounds: PendingBounds) {}

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

  get(id: string): Subscription | undefined {
    return this.subs.get(id);
  }

  /** Whether `s` is still subscribed (not dropped, nor replaced). */
  isCurrent(s: Subscription): boolean {
    return this.subs.get(s.id) === s;
  }

  /** Every subscription, live: one dropped while iterating is not visited. */
  values(): IterableIterator<Subscription> {
    return this.subs.values();
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

  /** Whether the subscribed connections together hold more unsent bytes than the total bound. */
  crowded(): boolean {
    let total = 0;
    for (const sink of this.bySink.keys()) total += sink.unsentBytes();
    return total > this.bounds.pendingBytesInTotal;
  }

  drop(s: Subscription): void {
    this.subs.delete(s.id);
    const mine = this.bySink.get(s.sink);
    mine?.delete(s.id);
    if (mine?.size === 0) this.bySink.delete(s.sink);
  }

  /** Called from the store's commit events: must never throw into the store. */
  send<N extends NotificationName>(s: Subscription, method: N, params: Params<N>, crowded: boolean): void {
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
      if (s.held.length >= this.bounds.pendingNotifications) {
        this.drop(s);
        s.sink.notify('watch/overflow', { subscription: s.id } satisfies Params<'watch/overflow'>);
        return;
      }
      s.held.push({ method, params } as Held);
      return;
    }
    this.deliver(s, { method, params } as Held, crowded);
  }

  /** Hands one notification to `s`'s connection, or drops `s` (closed: quietly; past a bound: with watch/overflow). */
  deliver(s: Subscription, { method, params }: Held, crowded: boolean): void {
    const sink = s.sink;
    if (sink.isClosed) {
      this.drop(s);
      return;
    }
    const unsent = sink.unsentBytes();
    if (unsent > this.bounds.pendingBytes || sink.unsentFrames() >= this.bounds.pendingNotifications || (crowded && unsent > MAX_PENDING_BYTES_WHEN_CROWDED)) {
      this.drop(s);
      sink.notify('watch/overflow', { subscription: s.id } satisfies Params<'watch/overflow'>);
      return;
    }
    sink.notify(method, params);
  }
}
