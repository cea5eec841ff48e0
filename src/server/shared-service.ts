// The per-user shared server (`serve --shared`) as an object, apart from the process that hosts
// it: one socket, any number of states (shared-hub.ts), and one ordered stop. It writes no server
// record and no per-state file of its own: its socket (and the optional log the process writes)
// live in the socket folder only. `serve --shared` adds argv, signals and process.exit; the tests
// and the bench run this same object.
import { lstatSync } from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import type { StoreOptions } from '../store/store.js';
import type { FramedTransportOptions } from '../transport/framing.js';
import { createFramedTransport } from '../transport/framing.js';
import { MAX_SHARED_CONNECTIONS } from '../transport/limits.js';
import type { UnixSocketListener } from '../transport/socket.js';
import { assertFolderSafe, listenUnixSocket, SocketError } from '../transport/socket.js';
import { ensureSocketFolder } from '../transport/socket-folder.js';
import type { IdleTimers } from './idle-watch.js';
import { IdleWatch } from './idle-watch.js';
import { STOP_GRACE_MS } from './service.js';
import type { Stopped } from './service.js';
import { DEFAULT_STATE_IDLE_MS } from './shared-defaults.js';
import { SharedHub } from './shared-hub.js';
import type { SocketLock } from './socket-lock.js';
import { lockSocket, socketLockPath } from './socket-lock.js';
import type { SubscriptionLimits } from './feed-limits.js';

export interface SharedServiceOptions {
  log: Logger;
  version: string;
  /** The state a connection whose first request names none is bound to. */
  defaultState: string;
  /** Options of every Store.open (durability…). */
  store?: StoreOptions;
  framing: FramedTransportOptions;
  /** Drop a state once nothing has used it for this many ms (default DEFAULT_STATE_IDLE_MS). */
  stateIdleMs?: number;
  /** Stop with 0 once no connection has been open and no request in flight for this many ms. */
  exitWhenIdleMs?: number;
  /** The timers of the exitWhenIdleMs watch (default: the real ones; a test drives its own). */
  idleTimers?: IdleTimers;
  /** How long a stop (or a drop) waits for answers still owed (default STOP_GRACE_MS). */
  stopGraceMs?: number;
  feed?: SubscriptionLimits;
  /** Told once a state is dropped and its store closed (a test awaits it). */
  dropped?: (statePath: string, why: string) => void;
  /** How often the socket file is checked to still be ours (default SOCKET_CHECK_MS; tests go lower). */
  socketCheckMs?: number;
  /** Told after each check that found the socket file in place (a test counts them). */
  socketStillThere?: () => void;
}

/**
 * How often the shared server checks that its socket file is still the one it made. Removed or
 * replaced (a cleaner of the runtime folder, an operator's rm), no client can reach it any more,
 * yet it holds the socket's lifetime lock, so no successor could start: it stops instead.
 */
export const SOCKET_CHECK_MS = 2000;

export class SharedService {
  readonly hub: SharedHub;
  /** Resolves once the ordered stop has finished, whatever started it. */
  readonly stopped: Promise<Stopped>;
  private resolveStopped!: (s: Stopped) => void;
  private stopping: Promise<Stopped> | undefined;
  private listener: UnixSocketListener | undefined;
  private listening: Promise<unknown> = Promise.resolve();
  private readonly idleWatch: IdleWatch | undefined;
  private readonly sockets = new Set<net.Socket>();
  /** Held from before the socket is looked at until the stop has finished (socket-lock.ts). */
  private lock: SocketLock | undefined;
  /** The check that the socket file is still ours (socketGone). */
  private socketCheck: NodeJS.Timeout | undefined;

  constructor(private readonly o: SharedServiceOptions) {
    this.stopped = new Promise((resolve) => (this.resolveStopped = resolve));
    const idleMs = o.exitWhenIdleMs;
    this.idleWatch = idleMs === undefined ? undefined : new IdleWatch(idleMs, () => void this.stop(0, `unused for ${idleMs} ms (--exit-when-idle)`), o.idleTimers);
    this.hub = new SharedHub({
      log: o.log,
      version: o.version,
      defaultState: o.defaultState,
      stateIdleMs: o.stateIdleMs ?? DEFAULT_STATE_IDLE_MS,
      graceMs: o.stopGraceMs ?? STOP_GRACE_MS,
      socket: () => this.listener?.path,
      ...(o.store ? { store: o.store } : {}),
      ...(o.feed ? { feed: o.feed } : {}),
      ...(o.dropped ? { dropped: o.dropped } : {}),
    });
  }

  /** The socket listened on, once listening. */
  get socket(): string | undefined {
    return this.listener?.path;
  }

  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  /**
   * Takes the socket's lifetime lock, then listens on `socketPath` (the default folder is made
   * 0700 when `makeFolder`); throws SocketError when it cannot (EADDRINUSE: another shared server
   * holds the lock or listens there; its socket is left untouched).
   */
  async listen(socketPath: string, options: { makeFolder?: boolean } = {}): Promise<string> {
    if (this.listener || this.stopping) throw new Error(this.stopping ? 'the shared server is stopping' : 'the shared server listens already');
    const at = path.resolve(socketPath);
    const listening = (async () => {
      if (options.makeFolder) await ensureSocketFolder(path.dirname(at));
      // The folder is checked before the lock file is made in it.
      await assertFolderSafe(path.dirname(at));
      this.lock ??= lockSocket(at);
      if (!this.lock) throw new SocketError(`another shared server holds ${socketLockPath(at)}: it serves ${at}, or is starting or stopping there`, 'EADDRINUSE');
      this.listener = await listenUnixSocket(at, (socket) => this.accept(socket), {
        onError: (err) => this.o.log.error({ err, socket: at }, 'the listening socket failed to accept a connection; it keeps listening'),
        onDrop: () => this.o.log.warn({ socket: at, max: MAX_SHARED_CONNECTIONS }, 'a connection was closed on arrival: the most connections served at once are open'),
        maxConnections: MAX_SHARED_CONNECTIONS,
      });
      this.watchSocketFile(this.listener.path);
      return this.listener.path;
    })();
    this.listening = listening.catch(() => undefined);
    // A start that failed holds nothing.
    listening.catch(() => {
      this.lock?.release();
      this.lock = undefined;
    });
    return listening;
  }

  /** Everything is attached: from now on, being unused for exitWhenIdleMs stops the server. */
  ready(): void {
    this.idleWatch?.start();
  }

  /**
   * The ordered stop; idempotent (the first caller's code and reason win). No new connections
   * (the socket file goes), then every state is dropped: its requests answered (at most the
   * grace), its store closed, its connections ended.
   */
  stop(code: number, why: string): Promise<Stopped> {
    this.stopping ??= (async () => {
      const log = this.o.log;
      this.idleWatch?.stop();
      clearInterval(this.socketCheck);
      log.info({ why }, 'stopping');
      await this.listening;
      await this.listener?.close().catch((err: unknown) => log.error({ err }, 'closing the socket failed'));
      await this.hub.stop();
      for (const socket of this.sockets) socket.destroy();
      // Last: a successor starts only once every state's lock is released and the socket is gone.
      this.lock?.release();
      log.info({ code }, 'stopped');
      const stopped = { code, why };
      this.resolveStopped(stopped);
      return stopped;
    })();
    return this.stopping;
  }

  /** Stops the server once the file at `at` is no longer the socket it listens on. */
  private watchSocketFile(at: string): void {
    const made = lstatSync(at);
    const ms = this.o.socketCheckMs ?? SOCKET_CHECK_MS;
    this.socketCheck = setInterval(() => {
      let now;
      try {
        now = lstatSync(at);
      } catch {
        now = undefined; // removed (or its folder made unreadable): unreachable all the same
      }
      if (now && now.ino === made.ino && now.dev === made.dev) {
        this.o.socketStillThere?.();
        return;
      }
      void this.stop(0, `the socket file ${at} was ${now ? 'replaced' : 'removed'}: no client can reach this server any more`);
    }, ms).unref();
  }

  private accept(socket: net.Socket): void {
    this.sockets.add(socket);
    // Presence is the socket's own life: a connection ended by its state's drop (the folder
    // removed while it was open) closes its socket without its reader telling the hub, and was
    // then counted as present for ever, so --exit-when-idle never fired. What a closed socket
    // still owes is finished by the ordered stop, not by waiting here.
    this.idleWatch?.enter();
    socket.once('close', () => {
      this.sockets.delete(socket);
      this.idleWatch?.leave();
    });
    this.hub.accept(createFramedTransport(socket, socket, { onProtocolError: (e) => this.o.log.debug(e, 'protocol error answered'), ...this.o.framing }));
  }
}
