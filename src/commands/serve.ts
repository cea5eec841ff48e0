// `herrscher-state serve`: opens the store, serves it on stdio and/or a unix socket, and owns
// the process lifecycle: stdin EOF, the exit notification and SIGTERM/SIGINT all end in the
// same orderly stop (answer what was received, finish writes, remove the socket and its record,
// flush logs).
import type net from 'node:net';
import type { Logger } from 'pino';
import path from 'node:path';
import { IdleWatch } from '../server/idle-watch.js';
import { StateServer } from '../server/server.js';
import type { Durability } from '../store/state-store.js';
import { Store } from '../store/store.js';
import type { FoundSocket } from '../transport/discovery.js';
import { serveSocket } from '../transport/discovery.js';
import { createFramedTransport } from '../transport/framing.js';
import { removeServerRecord, writeServerRecord } from '../transport/server-record.js';
import type { UnixSocketListener } from '../transport/socket.js';
import { assertFolderSafe, listenUnixSocket, SocketError } from '../transport/socket.js';
import { ensureSocketFolder } from '../transport/socket-folder.js';
import { MAX_CONNECTIONS } from '../transport/limits.js';
import { createStdioTransport } from '../transport/stdio.js';
import type { LogFormat, LogLevel } from './logger.js';
import { createLogging } from './logger.js';
import { applyHeapSettings } from './serve-heap.js';
import { exitOnStartFailure } from './start-failure.js';

export interface ServeOptions {
  state: string;
  stdio: boolean;
  socket?: string;
  /** With --stdio: serve stdio alone, no default socket. */
  noSocket?: boolean;
  /** A descriptor on the state's lock file through which the host that spawned us holds the flock. */
  lockFd?: number;
  durability: Durability;
  maxMessageBytes: number;
  logLevel: LogLevel;
  logFile?: string;
  logFormat?: LogFormat;
  announce: boolean;
  /** Stop once the parent process is gone (npm forwards SIGINT/SIGTERM but dies of SIGHUP alone). */
  exitWithParent?: boolean;
  /** Stop once no connection has been open and no request in flight for this many ms. */
  exitWhenIdleMs?: number;
  version: string;
}

/** How long a stop waits for in-flight requests before it closes connections anyway. */
const STOP_GRACE_MS = 5000;
/** How often --exit-with-parent looks whether the parent is still there. */
const PARENT_POLL_MS = 500;

export async function serve(o: ServeOptions): Promise<void> {
  // First, so the collections that loading the store causes already follow it.
  const heap = applyHeapSettings();
  const logging = createLogging(o.logLevel, o.logFile, o.logFormat);
  const { log, flush } = logging;
  // A socket that cannot be served is said before the state dir is created or locked. A socket
  // in the state dir itself (`npm start`'s) is checked when it listens: opening the store makes
  // that folder, so on a first start it does not exist yet.
  const named = o.noSocket ? undefined : serveSocket({ socket: o.socket });
  if (named && named.source !== 'default' && path.dirname(named.path) !== path.dirname(path.resolve(o.state))) {
    await assertFolderSafe(path.dirname(named.path)).catch((err: unknown) => exitOnStartFailure(logging, 'socket', named.path, err));
  }
  let store: Store;
  try {
    store = await Store.open(o.state, {
      durability: o.durability,
      warn: (message, err) => log.warn({ err }, message),
      ...(o.lockFd !== undefined ? { lockFd: o.lockFd } : {}),
      error: (message, err) => log.error({ err }, message),
    });
  } catch (err) {
    exitOnStartFailure(logging, 'state', path.resolve(o.state), err);
  }

  let stopping: Promise<void> | undefined;
  let listener: UnixSocketListener | undefined;
  let moving: Promise<void> = Promise.resolve();
  const idle = o.exitWhenIdleMs === undefined ? undefined
    : new IdleWatch(o.exitWhenIdleMs, () => void stop(0, `unused for ${o.exitWhenIdleMs} ms (--exit-when-idle)`));
  const stop = (code: number, why: string): Promise<void> =>
    (stopping ??= (async () => {
      idle?.stop();
      log.info({ why }, 'stopping');
      await moving;
      await listener?.close().catch((err: unknown) => log.error({ err }, 'closing the socket failed'));
      await removeServerRecord(store.statePath).catch((err: unknown) => log.error({ err }, 'removing the server record failed'));
      await Promise.race([server.idle(), new Promise((r) => setTimeout(r, STOP_GRACE_MS).unref())]);
      await store.close().catch((err: unknown) => log.error({ err }, 'finishing writes failed'));
      server.disposeAll();
      log.info({ code }, 'stopped');
      flush();
      process.exit(code);
    })());

  const server = new StateServer(store, log, {
    version: o.version,
    onExit: (code) => void stop(code, 'exit notification'),
    // The host that spawned us owns our lifecycle; a bridge on the socket must not end it for everyone.
    lifecycleOwner: o.stdio ? 'stdio' : 'any',
    socket: () => listener?.path,
    ...(idle ? { presence: idle } : {}),
  });
  process.once('SIGTERM', () => void stop(0, 'SIGTERM'));
  process.once('SIGINT', () => void stop(0, 'SIGINT'));
  // A closed terminal or a supervisor's reload signal: the same orderly stop, not death by 129.
  process.once('SIGHUP', () => void stop(0, 'SIGHUP'));
  if (o.exitWithParent) {
    // Node has no parent-death signal: an orphan is re-parented, so a changed ppid means the parent died.
    const parent = process.ppid;
    setInterval(() => {
      if (process.ppid !== parent) void stop(0, 'parent process gone');
    }, PARENT_POLL_MS).unref();
  }

  const accept = (socket: net.Socket): void => {
    const t = createFramedTransport(socket, socket, {
      maxMessageBytes: o.maxMessageBytes,
      onProtocolError: (e) => log.debug(e, 'protocol error answered'),
    });
    const conn = server.connect(t.reader, t.writer, 'socket');
    // The client finished sending (or left): answer what it sent, then end our side.
    conn.onClose(() => void conn.idle().then(() => t.close()));
  };
  const record = (at: string): Promise<void> =>
    writeServerRecord({ pid: process.pid, socket: at, state: store.statePath, version: o.version, startedAt: new Date().toISOString() })
      .catch((err: unknown) => log.error({ err }, 'recording the socket in the state dir failed; clients must be given the socket'));

  const wanted = o.noSocket ? undefined : socketFor(o, store);
  if (wanted) {
    try {
      // A signal may arrive once the socket accepts but before listenOn returns (a client that
      // probed it, then sent SIGTERM): stop() awaits `moving`, so it then closes this listener
      // and removes the socket file instead of exiting with it left behind. (A failure to listen
      // is handled by the catch below; `moving` only orders the stop after it.)
      const listening = listenOn(wanted, accept, log);
      moving = listening.then(
        () => undefined,
        () => undefined,
      );
      listener = await listening;
    } catch (err) {
      // A host on stdio is served even when the default socket cannot be: another live server
      // holds it, or its folder is not safely ours (another user made $TMPDIR/herrscher-state-<uid>
      // first, an inherited XDG_RUNTIME_DIR is someone else's or gone).
      if (o.stdio && wanted.source === 'default' && err instanceof SocketError) {
        const why = err.code === 'EADDRINUSE' ? 'the default socket is held by another live server' : `the default socket cannot be served: ${err.message}`;
        log.warn({ socket: wanted.path, code: err.code }, `${why}: serving stdio alone (pass --socket to serve one)`);
      } else {
        await store.close();
        exitOnStartFailure(logging, 'socket', wanted.path, err);
      }
    }
    if (listener) await record(listener.path);
  }
  // The host's first request (often `status`, to learn the socket for its bridges) is read only
  // now that the socket listens and is recorded, so it is answered with the socket.
  if (o.stdio) {
    // The stdout guard sends any stray write (a dependency's console.log) to stderr: only frames reach the host.
    const t = createStdioTransport({ maxMessageBytes: o.maxMessageBytes, onProtocolError: (e) => log.debug(e, 'protocol error answered') });
    const conn = server.connect(t.reader, t.writer, 'stdio');
    // stdin EOF means the host is gone: answer what it sent, finish the writes, exit 0.
    conn.onClose(() => {
      void conn.idle().then(() => stop(0, 'stdin closed'));
    });
  }

  const moveSocket = async (instanceId: string): Promise<void> => {
    if (stopping || !listener) return;
    let next: UnixSocketListener;
    try {
      next = await listenOn(serveSocket({ instanceId }), accept, log);
    } catch (err) {
      log.error({ err, socket: listener.path }, 'the instance id changed but its socket cannot be served; staying on the old one');
      return;
    }
    const old = listener;
    listener = next;
    await record(next.path);
    await old.close().catch((err: unknown) => log.error({ err }, 'closing the old socket failed'));
    log.info({ socket: next.path, was: old.path }, 'instance id changed: now listening on its socket');
  };

  if (listener && wanted?.source === 'default') {
    // The default socket is named for the instance id: follow a change, so Herrscher's naming
    // holds while we run, and re-record so clients that know the state file follow too.
    store.watch({
      stateCommitted: (_rev, before, after) => {
        if ((before.instanceID ?? '') === (after.instanceID ?? '') || stopping) return;
        moving = moving.then(() => moveSocket(after.instanceID ?? ''));
      },
    });
  }
  idle?.start();
  log.info({ state: store.statePath, socket: listener?.path, stdio: o.stdio, durability: o.durability, lockFd: o.lockFd, exitWhenIdleMs: o.exitWhenIdleMs, heap }, 'serving');
  if (o.announce) announce(store, listener, o.stdio);
}

/** The socket to serve: --socket, $HERRSCHER_STATE_SOCKET, else the default (also with --stdio). */
function socketFor(o: ServeOptions, store: Store): FoundSocket {
  return serveSocket({ socket: o.socket, instanceId: store.getState().instanceID });
}

/** Listens on `at`; the default folder is made (0700) and checked first. */
async function listenOn(at: FoundSocket, accept: (s: net.Socket) => void, log: Logger): Promise<UnixSocketListener> {
  if (at.source === 'default') await ensureSocketFolder(path.dirname(at.path));
  return listenUnixSocket(at.path, accept, {
    onError: (err) => log.error({ err, socket: at.path }, 'the listening socket failed to accept a connection; it keeps listening'),
    onDrop: () => log.warn({ socket: at.path, max: MAX_CONNECTIONS }, 'a connection was closed on arrival: the most connections served at once are open'),
  });
}

function announce(store: Store, listener: UnixSocketListener | undefined, stdio: boolean): void {
  const rel = (p: string): string => (path.relative(process.cwd(), p).startsWith('..') ? p : path.relative(process.cwd(), p));
  const cli = rel(process.argv[1] ?? 'herrscher-state');
  process.stderr.write(
    `herrscher-state: serving ${store.statePath}${listener ? ` on ${listener.path}` : ''}${stdio ? ' and stdio' : ''}\n` +
      (listener ? `try: node ${cli} call session/list --socket ${rel(listener.path)}\n` : ''),
  );
}
