// What a StateClient is underneath: a Link (one guarded connection) and, when asked for, the
// reconnection that replaces it. Reconnecting waits with backoff, dials again, and re-subscribes
// every open subscription with `since` (tracked-subscriptions.ts), so the notification handlers
// keep receiving, each change once, under the subscription id the caller was first given.
import type { ConnectionState, ReconnectOptions } from './reconnect-options.js';
import { backoffDelay, reconnectDefaults } from './reconnect-options.js';
import { CallTimeoutError, closedError, ConnectionClosedError } from './client-errors.js';
import type { Link } from './link.js';
import type { CallOptions } from './call-options.js';
import { left, TrackedSubscriptions } from './tracked-subscriptions.js';

type Params = Record<string, unknown>;
type NotificationHandler = (params: unknown) => void;


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
  private readonly subscriptions = new TrackedSubscriptions(
    () => Boolean(this.options.reconnect),
    (method, params) => {
      for (const h of this.handlers.get(method) ?? []) h(params);
    },
  );
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
        await this.subscriptions.resubscribe(link);
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

  private async subscribe(params: Params, deadline: number | undefined): Promise<unknown> {
    const link = await this.current('watch/subscribe', deadline);
    return this.subscriptions.subscribe(link, params, deadline);
  }

  private async unsubscribe(params: Params, deadline: number | undefined): Promise<unknown> {
    const link = await this.current('watch/unsubscribe', deadline);
    return this.subscriptions.unsubscribe(link, params, deadline);
  }

  /** Hands a notification to the tracked subscriptions, then to the handlers. */
  private route(method: string, raw: unknown): void {
    this.subscriptions.route(method, raw);
  }
}
