// A running server, independent of the process that hosts it: the store it owns, the StateServer,
// the connections and the listener attached to it, the record that lets clients find it, and the
// one ordered stop every way of stopping ends in. `serve` adds argv, signals and process.exit;
// the tests, the bench and the crash test run this same object, so they stop as production does.
// Its options and results are declared in service-options.ts.
import type net from 'node:net';
import path from 'node:path';
import type { Logger } from 'pino';
import { Store } from '../store/store.js';
import type { FoundSocket } from '../transport/discovery.js';
import { serveSocket } from '../transport/discovery.js';
import type { FramedTransport, FramedTransportOptions } from '../transport/framing.js';
import { createFramedTransport } from '../transport/framing.js';
import { MAX_CONNECTIONS } from '../transport/limits.js';
import { removeServerRecord, writeServerRecord } from '../transport/server-record.js';
import type { UnixSocketListener } from '../transport/socket.js';
import { listenUnixSocket } from '../transport/socket.js';
import { ensureSocketFolder } from '../transport/socket-folder.js';
import type { ServerConnection } from './connection.js';
import { StateServer } from './server.js';
import { IdleWatch } from './idle-watch.js';
import type { ConnectionKind, ListenOptions, ServiceOptions, Stopped } from './service-options.js';
import { STOP_GRACE_MS } from './service-options.js';
import type { StateDirWatch } from './state-dir-watch.js';
import { watchStateDir } from './state-dir-watch.js';

export { STOP_GRACE_MS } from './service-options.js';
export type { ConnectionKind, ListenOptions, ServiceOptions, Stopped } from './service-options.js';

const noop = (): void => undefined;

export class Service {
  readonly server: StateServer;
  /** Resolves once the ordered stop has finished, whatever started it. */
  readonly stopped: Promise<Stopped>;
  private resolveStopped!: (s: Stopped) => void;
  private stopping: Promise<Stopped> | undefined;
  private listener: UnixSocketListener | undefined;
  /** A listen or a socket move in progress: the stop waits for it, then closes what it opened. */
  private moving: Promise<void> = Promise.resolve();
  private readonly dirWatch: StateDirWatch | undefined;
  private readonly idleWatch: IdleWatch | undefined;
  /** Set once the state dir is gone: the store's complaints about missing files are then expected. */
  private readonly gone: { dir: boolean };
  /** Whether this service wrote a server record (the stop removes it). */
  private recorded = false;
  private readonly startedAt = new Date().toISOString();
  /** The socket clients connected now: the stop closes them, so it ends them in any host process. */
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    readonly store: Store,
    private readonly log: Logger,
    private readonly o: ServiceOptions,
    gone: { dir: boolean },
  ) {
    this.gone = gone;
    this.stopped = new Promise((resolve) => (this.resolveStopped = resolve));
    const idleMs = o.exitWhenIdleMs;
    this.idleWatch = idleMs === undefined ? undefined : new IdleWatch(idleMs, () => void this.stop(0, `unused for ${idleMs} ms (--exit-when-idle)`), o.idleTimers);
    const presence = o.presence ?? this.idleWatch;
    this.server = new StateServer(store, log, {
      version: o.version,
      onExit: (code) => void this.stop(code, 'exit notification'),
      lifecycleOwner: o.lifecycleOwner,
      ...(o.stopWhenShutdownClientLeaves ? { onShutdownClientGone: () => void this.stop(0, 'the client that sent shutdown left without exit') } : {}),
      socket: () => this.listener?.path,
      ...(o.feed ? { feed: o.feed } : {}),
      ...(presence ? { presence } : {}),
    });
    if (o.watchStateDir !== false) {
      this.dirWatch = watchStateDir(
        store.dir,
        (why) => {
          this.gone.dir = true;
          log.warn({ dir: store.dir }, `${why}: stopping, as there is nowhere left to write`);
          void this.stop(0, 'state dir removed');
        },
        (err) => log.warn({ err, dir: store.dir }, 'the state dir cannot be watched: its removal is noticed by polling only'),
        o.stateDirStillThere,
        undefined,
        o.stateDirIo,
      );
    }
  }

  /** Opens the store (its lock, replay and checks; a StoreError says why it cannot) and the server. */
  static async open(o: ServiceOptions): Promise<Service> {
    const log = o.log;
    const gone = { dir: false };
    const store = await Store.open(o.state, {
      warn: (message, err) => log.warn({ err }, message),
      // Once the state dir is gone every file write fails; the stop's warn line already says why.
      error: (message, err) => (gone.dir ? log.debug({ err }, message) : log.error({ err }, message)),
      ...o.store,
    });
    return new Service(store, log, o, gone);
  }

  /** The socket listened on now (it moves when the instance id changes), if any. */
  get socket(): string | undefined {
    return this.listener?.path;
  }

  /**
   * Listens on `at` (a path, or where discovery says), records it for clients, and when it is
   * the default socket (named for the instance id) follows the instance id. One listener per
   * service. Throws SocketError when it cannot listen; the service is then as before.
   */
  async listen(at: FoundSocket | string, options: ListenOptions = {}): Promise<string> {
    if (this.listener || this.stopping) throw new Error(this.stopping ? 'the service is stopping' : 'the service listens already');
    const found: FoundSocket = typeof at === 'string' ? { path: path.resolve(at), source: 'explicit' } : at;
    // A stop that begins meanwhile awaits `moving`, then closes this listener and removes the
    // record: a socket file is never left behind by a signal that arrives during the start.
    const listening = (async () => {
      this.listener = await this.listenOn(found);
      if (options.record !== false) await this.record(this.listener.path);
      return this.listener;
    })();
    this.moving = listening.then(noop, noop);
    const listener = await listening;
    if (found.source === 'default') this.followInstanceId();
    return listener.path;
  }

  /** Everything is attached: from now on, being unused for exitWhenIdleMs stops the service. */
  ready(): void {
    this.idleWatch?.start();
  }

  /** Serves one client over an existing transport; the host's (`stdio`) end stops the service with 0. */
  attach(t: FramedTransport, kind: ConnectionKind): ServerConnection {
    const conn = this.server.connect(t.reader, t.writer, kind);
    if (kind === 'stdio') {
      // The host is gone: answer what it sent, finish the writes, stop.
      conn.onClose(() => void conn.idle().then(() => this.stop(0, 'stdin closed')));
    } else {
      // The client finished sending (or left): answer what it sent, then end our side.
      conn.onClose(() => void conn.idle().then(() => t.close()));
    }
    this.o.onConnection?.(conn, kind);
    return conn;
  }

  /** Serves one client over a pair of byte streams, framed as the service's connections are. */
  attachStreams(input: NodeJS.ReadableStream, output: NodeJS.WritableStream, kind: ConnectionKind): ServerConnection {
    return this.attach(createFramedTransport(input, output, this.framing()), kind);
  }

  /** The framing options of a connection (stdio's transport is built by its caller with these). */
  framing(): FramedTransportOptions {
    return { onProtocolError: (e) => this.log.debug(e, 'protocol error answered'), ...this.o.framing };
  }

  /** Whether the ordered stop has begun (or the start failed): a later stop call changes nothing. */
  get isStopping(): boolean {
    return this.stopping !== undefined;
  }

  /**
   * The ordered stop; idempotent (the first caller's code and reason win). In order: no new
   * connections (the listener closes and its socket file goes) and no client sent here by the
   * record; the requests received are answered (at most stopGraceMs); every accepted write is
   * finished, the write-ahead log checkpointed and the lock released; the connections end.
   */
  stop(code: number, why: string): Promise<Stopped> {
    this.stopping ??= (async () => {
      const log = this.log;
      this.idleWatch?.stop();
      log.info({ why }, 'stopping');
      this.dirWatch?.close();
      await this.moving;
      await this.listener?.close().catch((err: unknown) => log.error({ err }, 'closing the socket failed'));
      if (this.recorded) {
        await removeServerRecord(this.store.statePath).catch((err: unknown) => log.error({ err }, 'removing the server record failed'));
      }
      log.debug({ step: 'closed' }, 'stop: no new connections, the socket and its record removed');
      // No catch-up reads another page (each finishes the one it reads): a slow reader's backlog
      // does not hold up the stop, and no read meets the store closing.
      await this.server.subscriptions.close();
      log.debug({ step: 'feed closed' }, 'stop: every catch-up of a returning subscriber is over');
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), this.o.stopGraceMs ?? STOP_GRACE_MS)));
      const answered = await Promise.race([this.server.idle().then(() => true), grace]);
      clearTimeout(timer);
      if (answered) log.debug({ step: 'answered' }, 'stop: every request received is answered');
      else log.warn({ step: 'answered', graceMs: this.o.stopGraceMs ?? STOP_GRACE_MS }, 'stop: requests still unanswered after the grace period; their connections are ended');
      await this.store.close().catch((err: unknown) =>
        this.gone.dir ? log.debug({ err }, 'finishing writes failed: the state dir is gone') : log.error({ err }, 'finishing writes failed'),
      );
      log.debug({ step: 'finished' }, 'stop: every accepted write finished, the lock released');
      this.server.disposeAll();
      // What was answered is in the peer's receive queue already; what a stalled client left unread is not waited for.
      for (const socket of this.sockets) socket.destroy();
      log.info({ code }, 'stopped');
      const stopped = { code, why };
      this.resolveStopped(stopped);
      return stopped;
    })();
    return this.stopping;
  }

  /**
   * Releases the store of a service whose start failed, without the stop's log lines (the caller
   * reports why) and without resolving `stopped` (the caller decides what follows).
   */
  async discard(): Promise<void> {
    this.idleWatch?.stop();
    this.dirWatch?.close();
    this.stopping ??= Promise.resolve({ code: 1, why: 'start failed' });
    await this.listener?.close().catch(noop);
    await this.store.close();
  }

  private async listenOn(at: FoundSocket): Promise<UnixSocketListener> {
    if (at.source === 'default') await ensureSocketFolder(path.dirname(at.path));
    return listenUnixSocket(at.path, (socket: net.Socket) => this.accept(socket), {
      onError: (err) => this.log.error({ err, socket: at.path }, 'the listening socket failed to accept a connection; it keeps listening'),
      onDrop: () => this.log.warn({ socket: at.path, max: MAX_CONNECTIONS }, 'a connection was closed on arrival: the most connections served at once are open'),
    });
  }

  /** A socket client: served until it leaves, or until the stop ends its connection. */
  private accept(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    this.attachStreams(socket, socket, 'socket');
  }

  private record(at: string): Promise<void> {
    this.recorded = true;
    return writeServerRecord({ pid: process.pid, socket: at, state: this.store.statePath, version: this.o.version, startedAt: this.startedAt }).catch(
      (err: unknown) => this.log.error({ err }, 'recording the socket in the state dir failed; clients must be given the socket'),
    );
  }

  /**
   * The default socket is named for the instance id: follow a change, so Herrscher's naming
   * holds while we run, and re-record so clients that know the state file follow too.
   */
  private followInstanceId(): void {
    this.store.watch({
      stateCommitted: (_rev, before, after) => {
        if ((before.instanceID ?? '') === (after.instanceID ?? '') || this.stopping) return;
        this.moving = this.moving.then(() => this.moveSocket(after.instanceID ?? ''));
      },
    });
  }

  private async moveSocket(instanceId: string): Promise<void> {
    if (this.stopping || !this.listener) return;
    let next: UnixSocketListener;
    try {
      next = await this.listenOn(serveSocket({ instanceId }));
    } catch (err) {
      this.log.error({ err, socket: this.listener.path }, 'the instance id changed but its socket cannot be served; staying on the old one');
      return;
    }
    const old = this.listener;
    this.listener = next;
    await this.record(next.path);
    await old.close().catch((err: unknown) => this.log.error({ err }, 'closing the old socket failed'));
    this.log.info({ socket: next.path, was: old.path }, 'instance id changed: now listening on its socket');
  }
}
