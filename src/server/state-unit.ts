// One state of the shared server: its store (its own single-writer lock), its StateServer, the
// connections bound to it, and the two ways it is dropped: unused (no connection bound and
// nothing in flight) for the state-idle time, or at once when its folder is removed. A drop
// answers what was received, closes the store (which writes nothing then) and ends the bound
// connections; the shared server opens the state again on the next call that names it.
import type { Logger } from 'pino';
import type { FramedTransport } from '../transport/framing.js';
import type { Store } from '../store/store.js';
import type { MessageReader } from 'vscode-jsonrpc/node';
import type { ServerConnection } from './connection.js';
import { IdleWatch } from './idle-watch.js';
import { StateServer } from './server.js';
import type { SubscriptionLimits } from './feed-limits.js';
import type { DirWatchIo, StateDirWatch } from './state-dir-watch.js';
import { SHARED_POLL_MS, watchStateDir } from './state-dir-watch.js';

export interface StateUnitOptions {
  log: Logger;
  version: string;
  /** The shared server's socket, for `status`. */
  socket: () => string | undefined;
  /** States the shared server has open now, for `status`. */
  statesOpen: () => number;
  /** Drop the state once nothing has used it for this many ms. */
  idleMs: number;
  /** How long a drop waits for answers still owed before it ends the connections anyway. */
  graceMs: number;
  feed?: SubscriptionLimits;
  /** Told as the drop begins, with its end (the hub forgets the unit at once, so no new connection binds to it). */
  dropping: (why: string, done: Promise<void>) => void;
  /** The folder watch's fs calls and timers (default: the real ones; a test passes its own). */
  dirWatchIo?: Partial<DirWatchIo>;
}

export class StateUnit {
  readonly server: StateServer;
  private readonly idle: IdleWatch;
  private readonly dirWatch: StateDirWatch;
  private readonly transports = new Set<FramedTransport>();
  private closing: Promise<void> | undefined;

  constructor(
    readonly store: Store,
    /** Whether the state's folder is gone (the store's complaints about missing files are then expected). */
    private readonly gone: { dir: boolean },
    private readonly o: StateUnitOptions,
  ) {
    this.idle = new IdleWatch(o.idleMs, () => void this.drop(`unused for ${o.idleMs} ms`));
    this.server = new StateServer(store, o.log, {
      version: o.version,
      onExit: () => undefined,
      lifecycleOwner: 'none',
      socket: o.socket,
      statesOpen: o.statesOpen,
      presence: this.idle,
      ...(o.feed ? { feed: o.feed } : {}),
    });
    this.dirWatch = watchStateDir(
      store.dir,
      (why) => {
        gone.dir = true;
        void this.drop(why);
      },
      (err) => o.log.warn({ err, dir: store.dir }, 'the state dir cannot be watched: its removal is noticed by polling only'),
      undefined,
      SHARED_POLL_MS,
      o.dirWatchIo,
    );
    this.idle.start();
  }

  get statePath(): string {
    return this.store.statePath;
  }

  /** Whether the drop has begun: no connection binds to it any more. */
  get isDropping(): boolean {
    return this.closing !== undefined;
  }

  /** Serves one connection on this state; false when the unit is being dropped (bind to a fresh one). */
  bind(reader: MessageReader, t: FramedTransport): ServerConnection | undefined {
    if (this.closing) return undefined;
    const conn = this.server.connect(reader, t.writer, 'socket');
    this.transports.add(t);
    // The client finished sending (or left): answer what it sent, then end our side.
    conn.onClose(() => void conn.idle().then(() => {
      this.transports.delete(t);
      t.close();
    }));
    return conn;
  }

  /**
   * Drops the state; idempotent. In order: no new connection binds, the change feed ends, the
   * requests received are answered (at most graceMs), the store closes (its locks released), the
   * bound connections end.
   */
  drop(why: string): Promise<void> {
    if (this.closing) return this.closing;
    this.closing = this.dropNow(why);
    this.o.dropping(why, this.closing);
    return this.closing;
  }

  private async dropNow(why: string): Promise<void> {
    const log = this.o.log;
    this.idle.stop();
    this.dirWatch.close();
    log.info({ why }, 'dropping the state');
    await this.server.subscriptions.close();
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), this.o.graceMs)));
    const answered = await Promise.race([this.server.idle().then(() => true), grace]);
    clearTimeout(timer);
    if (!answered) log.warn({ graceMs: this.o.graceMs }, 'dropping the state: requests still unanswered after the grace period; their connections are ended');
    await this.store.close().catch((err: unknown) =>
      this.gone.dir ? log.debug({ err }, 'closing the store failed: the state dir is gone') : log.error({ err }, 'closing the store failed'),
    );
    this.server.disposeAll();
    for (const t of this.transports) t.close();
    this.transports.clear();
    log.debug('state dropped');
  }
}
