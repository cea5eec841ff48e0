// What a StateClient is underneath: a Link (one guarded connection) and, when asked for, the
// reconnection that replaces it. Reconnecting waits with backoff, dials again, and re-subscribes
// every open subscription with `since` (the epoch, the last revision and the last seq per
// transcript it saw), so the notification handlers keep receiving, each change once, under the
// subscription id the caller was first given.
import type { ConnectionState, ReconnectOptions } from './reconnect-options.js';
import { backoffDelay, reconnectDefaults } from './reconnect-options.js';
import { CallTimeoutError, closedError, ConnectionClosedError } from './client-errors.js';
import type { Link } from './link.js';
import type { CallOptions } from './call-options.js';
import { SESSION_NAME_PATTERN } from '../protocol/session-name.js';

type Params = Record<string, unknown>;
type NotificationHandler = (params: unknown) => void;


/** A subscription as the caller knows it, and what it has seen (for `since`). */
interface Tracked {
  readonly userId: string;
  currentId: string;
  /** The subscribe params without `since`. */
  readonly filter: Params;
  epoch: string | undefined;
  revision: number | undefined;
  readonly seqs: Map<string, number>;
}

export interface CoreOptions {
  /** Opens a new connection (a reconnect runs the discovery rule again). */
  dial: () => Promise<Link>;
  /** Bound on every call, waiting for a reconnection included (undefined: none). */
  callTimeoutMs?: number;
  /** Reconnect when the connection is lost (undefined: do not). */
  reconnect?: ReconnectOptions;
  /** Run by close() after the link ended (e.g. wait for a spawned server's exit). */
  afterClose?: () => Promise<void>;
}

export type { CallOptions } from './call-options.js';


export class ClientCore {
  private link: Link;
  private reconnecting: Promise<Link> | undefined;
  private userClosed = false;
  private reason: Error | undefined;
  private readonly handlers = new Map<string, Set<NotificationHandler>>();
  private readonly stateListeners = new Set<(s: ConnectionState) => void>();
  private readonly tracked = new Map<string, Tracked>();
  private readonly byCurrent = new Map<string, Tracked>();
  /** Notifications for a subscription id not known yet (its subscribe reply is being handled). */
  private held: [string, Params][] | undefined;
  private subscribing = 0;
  /** Ends the wait before the next attempt early (close() during a backoff). */
  private wakeUp: (() => void) | undefined;

  constructor(first: Link, private readonly options: CoreOptions) {
    this.link = first;
    this.adopt(first);
  }

  get connection(): Link['connection'] {
    return this.link.connection;
  }

  /** Where the current connection goes (a reconnection may find another socket). */
  get where(): Link['where'] {
    return this.link.where;
  }

  /** Why the client is closed for good; undefined while it is open or reconnecting. */
  get closed(): Error | undefined {
    return this.reason;
  }

  onNotification(method: string, handler: NotificationHandler): { dispose(): void } {
    const set = this.handlers.get(method) ?? new Set<NotificationHandler>();
    set.add(handler);
    this.handlers.set(method, set);
    return { dispose: () => void set.delete(handler) };
  }

  onConnectionState(listener: (s: ConnectionState) => void): { dispose(): void } {
    this.stateListeners.add(listener);
    return { dispose: () => void this.stateListeners.delete(listener) };
  }

  async call(method: string, params: unknown, options: CallOptions = {}): Promise<unknown> {
    const timeoutMs = options.timeoutMs ?? this.options.callTimeoutMs;
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    if (method === 'exit') {
      await (await this.current(method, deadline)).notify(method, params);
      return null;
    }
    if (method === 'watch/subscribe') return this.subscribe((params ?? {}) as Params, deadline);
    if (method === 'watch/unsubscribe') return this.unsubscribe((params ?? {}) as Params, deadline);
    const link = await this.current(method, deadline);
    return link.request(method, params, left(deadline), timeoutMs);
  }

  async close(): Promise<void> {
    this.userClosed = true;
    this.reason ??= new ConnectionClosedError('the client was closed');
    this.link.fail(this.reason);
    this.wakeUp?.();
    await this.options.afterClose?.();
  }

  /** The open link, waiting for a reconnection (within the deadline) while there is none. */
  private async current(method: string, deadline: number | undefined): Promise<Link> {
    if (!this.link.closed) return this.link;
    if (this.reason) throw closedError(this.reason);
    const next = this.reconnecting;
    if (!next) throw closedError(this.link.closed);
    if (deadline === undefined) return next;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new CallTimeoutError(`${method}: the server did not come back in time (reconnecting)`)), Math.max(0, deadline - Date.now()));
    });
    try {
      return await Promise.race([next, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  private adopt(link: Link): void {
    link.onNotification((method, params) => this.route(method, params));
    link.onClosed((reason) => this.lost(link, reason));
  }

  private emit(s: ConnectionState): void {
    for (const l of this.stateListeners) l(s);
  }

  private lost(link: Link, reason: Error): void {
    if (link !== this.link || this.reconnecting) return;
    if (this.userClosed || !this.options.reconnect) {
      this.reason ??= reason;
      this.emit({ state: 'closed', error: this.reason });
      return;
    }
    this.emit({ state: 'lost', error: reason });
    this.reconnecting = this.retry(reason);
    // A call not waiting for it must not make its failure unhandled.
    this.reconnecting.catch(() => undefined);
  }

  private async retry(lostBy: Error): Promise<Link> {
    const o = { ...reconnectDefaults, ...this.options.reconnect };
    let last: Error = lostBy;
    for (let attempt = 1; o.maxAttempts === undefined || attempt <= o.maxAttempts; attempt++) {
      await this.wait(backoffDelay(o, attempt));
      if (this.userClosed) break;
      let link: Link | undefined;
      try {
        link = await this.options.dial();
        this.adopt(link);
        this.link = link;
        await this.resubscribe(link);
        if (link.closed) throw link.closed;
        this.reconnecting = undefined;
        this.emit({ state: 'restored', attempt });
        return link;
      } catch (err) {
        last = err instanceof Error ? err : new Error(String(err));
        link?.fail(new ConnectionClosedError(`reconnecting failed: ${last.message}`));
        this.emit({ state: 'retrying', attempt, error: last });
      }
    }
    this.reconnecting = undefined;
    this.reason ??= this.userClosed ? new ConnectionClosedError('the client was closed') : new ConnectionClosedError(`the server did not come back: ${last.message}`);
    this.emit({ state: 'closed', error: this.reason });
    throw this.reason;
  }

  /** Waits `ms`, or until close(): the timer keeps the process alive while it waits to reconnect. */
  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }

  /** Subscribes every tracked subscription again on `link`, with what it saw. */
  private async resubscribe(link: Link): Promise<void> {
    for (const t of this.tracked.values()) {
      const since: Params = {};
      if (t.epoch !== undefined) since.epoch = t.epoch;
      if (t.filter.sessions === true && t.revision !== undefined) since.revision = t.revision;
      const seqs = new Map(t.seqs);
      // "*": a session the subscriber saw nothing of was made after it subscribed (the seq of
      // every one there then was read, below), so all its entries are new to it: -1. Without
      // this, what was appended to it while the subscriber was away would never be sent.
      // A legacy row's name outside session/add's rule may not name a file the server reads, and
      // one such name in `since` would end the subscription (watch/overflow): left out.
      if (t.filter.transcripts === '*') {
        for (const name of await sessionNames(link)) if (!seqs.has(name) && SESSION_NAME_PATTERN.test(name)) seqs.set(name, -1);
      }
      if (seqs.size > 0) since.transcripts = Object.fromEntries(seqs);
      const r = (await this.subscribeOn(link, { ...t.filter, since }, undefined, (id) => {
        this.byCurrent.delete(t.currentId);
        t.currentId = id;
        this.byCurrent.set(id, t);
      })) as { subscription: string; revision: number; epoch: string };
      // What is replayed (or resynced) carries revisions up to this one.
      t.epoch = r.epoch;
      t.revision = r.revision;
    }
  }

  /**
   * watch/subscribe on `link`; `known` maps the new id before any notification for it is routed
   * (they are held until the reply has been handled).
   */
  private async subscribeOn(link: Link, params: Params, deadline: number | undefined, known: (id: string) => void): Promise<unknown> {
    this.subscribing++;
    this.held ??= [];
    try {
      const r = (await link.request('watch/subscribe', params, left(deadline))) as { subscription: string };
      known(r.subscription);
      return r;
    } finally {
      if (--this.subscribing === 0) {
        const held = this.held ?? [];
        this.held = undefined;
        for (const [method, p] of held) this.route(method, p);
      }
    }
  }

  private async subscribe(params: Params, deadline: number | undefined): Promise<unknown> {
    const link = await this.current('watch/subscribe', deadline);
    const { since, ...filter } = params as Params & { since?: { epoch?: string; revision?: number; transcripts?: Record<string, number> } };
    let t: Tracked | undefined;
    const r = (await this.subscribeOn(link, params, deadline, (id) => {
      if (!this.options.reconnect) return;
      t = { userId: id, currentId: id, filter, epoch: undefined, revision: undefined, seqs: new Map(Object.entries(since?.transcripts ?? {})) };
      this.tracked.set(id, t);
      this.byCurrent.set(id, t);
    })) as { subscription: string; revision: number; epoch: string };
    if (!t) return r;
    t.epoch = r.epoch;
    t.revision = Math.max(r.revision, t.revision ?? -1);
    // Where each listed transcript (with "*", each session's) stands now, so a reconnect asks for
    // what follows it (an entry appended meanwhile is notified, and the seq only moves forward).
    const names = Array.isArray(filter.transcripts) ? (filter.transcripts as string[])
      : filter.transcripts === '*' ? (await sessionNames(link, left(deadline)).catch(() => [])).filter((n) => SESSION_NAME_PATTERN.test(n)) : [];
    const listed = names.filter((n) => !t!.seqs.has(n));
    await Promise.all(listed.map(async (name) => {
      try {
        const page = (await link.request('transcript/read', { name, limit: 1 }, left(deadline))) as { firstSeq: number; entries: unknown[] };
        const seq = page.firstSeq + page.entries.length - 1;
        if (!t!.seqs.has(name) || t!.seqs.get(name)! < seq) t!.seqs.set(name, seq);
      } catch {
        // No such session yet: its entries will all be new; the first notified sets the seq.
      }
    }));
    return r;
  }

  private async unsubscribe(params: Params, deadline: number | undefined): Promise<unknown> {
    const link = await this.current('watch/unsubscribe', deadline);
    const t = typeof params.subscription === 'string' ? this.tracked.get(params.subscription) : undefined;
    if (!t) return link.request('watch/unsubscribe', params, left(deadline));
    this.tracked.delete(t.userId);
    this.byCurrent.delete(t.currentId);
    return link.request('watch/unsubscribe', { ...params, subscription: t.currentId }, left(deadline));
  }

  /** Updates what a tracked subscription saw, then hands the notification to the handlers. */
  private route(method: string, raw: unknown): void {
    let params = raw as Params;
    const id = typeof params?.subscription === 'string' ? params.subscription : undefined;
    if (id !== undefined && this.held && !this.byCurrent.has(id) && this.tracked.size + this.subscribing > 0) {
      this.held.push([method, params]);
      return;
    }
    const t = id === undefined ? undefined : this.byCurrent.get(id);
    if (t) {
      params = { ...params, subscription: t.userId };
      const rev = typeof params.revision === 'number' ? params.revision : undefined;
      if (method === 'transcript/didAppend' && typeof params.name === 'string' && typeof params.seq === 'number') t.seqs.set(params.name, params.seq);
      else if (method === 'state/resync') {
        t.revision = rev;
        if (typeof params.epoch === 'string') t.epoch = params.epoch;
      } else if (rev !== undefined) t.revision = Math.max(rev, t.revision ?? -1);
      else if (method === 'watch/overflow') {
        // The server dropped it: nothing more comes under this id until the caller subscribes again.
        this.tracked.delete(t.userId);
        this.byCurrent.delete(t.currentId);
      }
    }
    for (const h of this.handlers.get(method) ?? []) h(params);
  }
}

/** The names of the session rows on `link` (session/list). */
async function sessionNames(link: Link, timeoutMs?: number): Promise<string[]> {
  const r = (await link.request('session/list', {}, timeoutMs)) as { sessions?: { name?: unknown }[] | null };
  return (r.sessions ?? []).map((s) => s.name).filter((n): n is string => typeof n === 'string');
}

/** Milliseconds left until `deadline` (undefined: no deadline). */
function left(deadline: number | undefined): number | undefined {
  return deadline === undefined ? undefined : Math.max(0, deadline - Date.now());
}
