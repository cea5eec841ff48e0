// `herrscher-state serve`: the process around a Service (src/server/service.ts): argv, logging,
// signals, --exit-with-parent, --announce and the exit code. stdin EOF, the exit notification,
// SIGTERM/SIGINT/SIGHUP, --exit-when-idle and the state dir's removal all end in the Service's
// one ordered stop;
// then the logs are written out in order and the process exits with its code.
import path from 'node:path';
import { Service } from '../server/service.js';
import type { Durability } from '../store/state-store.js';
import { serveSocket } from '../transport/discovery.js';
import { assertFolderSafe, SocketError } from '../transport/socket.js';
import { createStdioTransport } from '../transport/stdio.js';
import { codeCacheUse } from './code-cache.js';
import type { LogFormat, LogLevel } from './log-options.js';
import type { Logging } from './logger.js';
import { createLogging } from './logger.js';
import { afterFirstReply } from './after-first-reply.js';
import { heapSettingsFor } from './heap-settings.js';
import { exitOnStartFailure } from './start-failure.js';
import type { ParentWatch } from './parent-watch.js';

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
  parent?: ParentWatch;
  /** Stop once no connection has been open and no request in flight for this many ms. */
  exitWhenIdleMs?: number;
  version: string;
}

/** How long the heap settings wait for the first reply on stdio before they are applied anyway. */
const HEAP_SETTINGS_LATEST_MS = 100;

export async function serve(o: ServeOptions): Promise<void> {
  // What serve will set (serve-heap.ts): applied after the first reply, below.
  const heap = heapSettingsFor(process.execArgv);
  const logging = createLogging(o.logLevel, o.logFile, o.logFormat);
  const { log } = logging;
  reopenLogOn('SIGUSR2', logging, o.logFile);
  if (o.parent?.gone) {
    // Gone before the store was opened: nothing to serve it, and the lock is never taken.
    log.info({ why: 'parent process gone' }, 'not serving: the parent process is gone already');
    await logging.end();
    process.exit(0);
  }
  // A socket that cannot be served is said before the state dir is created or locked. A socket
  // in the state dir itself (`npm start`'s) is checked when it listens: opening the store makes
  // that folder, so on a first start it does not exist yet.
  const named = o.noSocket ? undefined : serveSocket({ socket: o.socket });
  if (named && named.source !== 'default' && path.dirname(named.path) !== path.dirname(path.resolve(o.state))) {
    await assertFolderSafe(path.dirname(named.path)).catch((err: unknown) => exitOnStartFailure(logging, 'socket', named.path, err));
  }
  let service: Service;
  try {
    service = await Service.open({
      state: o.state,
      log,
      version: o.version,
      store: { durability: o.durability, ...(o.lockFd !== undefined ? { lockFd: o.lockFd } : {}) },
      framing: { maxMessageBytes: o.maxMessageBytes },
      // The host that spawned us owns our lifecycle; a bridge on the socket must not end it for everyone.
      lifecycleOwner: o.stdio ? 'stdio' : 'any',
      stopWhenShutdownClientLeaves: !o.stdio,
      ...(o.exitWhenIdleMs !== undefined ? { exitWhenIdleMs: o.exitWhenIdleMs } : {}),
    });
  } catch (err) {
    exitOnStartFailure(logging, 'state', path.resolve(o.state), err);
  }
  // Whatever stops the service (stdin EOF, exit, a signal, the state dir removed), the process ends with it.
  void service.stopped.then(async ({ code }) => {
    await logging.end();
    process.exit(code);
  });
  const stop = (why: string): void => void service.stop(0, why);
  // SIGTERM, SIGINT, and SIGHUP (a closed terminal, a supervisor's reload signal) start the same
  // ordered stop, not death by 143, 130 or 129. The listeners stay for the process's whole life,
  // never `once`: a library that loads signal-exit on this thread (write-file-atomic would, were
  // it loaded here, not on the writer thread) re-raises a signal whose only listener is its
  // own, which would kill the server in the middle of its stop. A signal during the stop is logged
  // and ignored: one keypress often arrives twice (the terminal signals the process group and
  // npm forwards the same SIGINT), and the stop is what keeps the accepted writes; SIGKILL ends
  // the process at once.
  const onSignal = (signal: NodeJS.Signals): void => {
    if (!service.isStopping) return stop(signal);
    log.warn({ signal }, `${signal} ignored: already stopping, to finish the accepted writes (SIGKILL ends the process now)`);
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, onSignal);
  // Gone during the start: stopped now, in order, like any later stop.
  o.parent?.onGone(() => stop('parent process gone'));

  // The socket to serve: --socket, $HERRSCHER_STATE_SOCKET, else the default (also with --stdio).
  const wanted = o.noSocket ? undefined : serveSocket({ socket: o.socket, instanceId: service.store.getState().instanceID });
  if (wanted) {
    try {
      await service.listen(wanted);
    } catch (err) {
      // A host on stdio is served even when the default socket cannot be: another live server
      // holds it, or its folder is not safely ours (another user made $TMPDIR/herrscher-state-<uid>
      // first, an inherited XDG_RUNTIME_DIR is someone else's or gone).
      if (o.stdio && wanted.source === 'default' && err instanceof SocketError) {
        const why = err.code === 'EADDRINUSE' ? 'the default socket is held by another live server' : `the default socket cannot be served: ${err.message}`;
        log.warn({ socket: wanted.path, code: err.code }, `${why}: serving stdio alone (pass --socket to serve one)`);
      } else {
        await service.discard();
        exitOnStartFailure(logging, 'socket', wanted.path, err);
      }
    }
  }
  // The host's first request (often `status`, to learn the socket for its bridges) is read only
  // now that the socket listens and is recorded, so it is answered with the socket.
  // The stdout guard sends any stray write (a dependency's console.log) to stderr: only frames reach the host.
  // stdin EOF means the host is gone: the service answers what it sent, finishes the writes and stops with 0.
  const stdio = o.stdio ? service.attach(createStdioTransport(service.framing()), 'stdio') : undefined;
  // The heap settings (and loading node's v8 and perf_hooks for them, ~1 ms) wait for the host's
  // first reply: they matter once the heap has grown under load, not for the few MB of a start,
  // which then follows V8's own growth (the same factor up to the cap). Loading them at the start
  // delayed every host's first reply; a first write's Worker started meanwhile needs no hold.
  afterFirstReply(
    stdio,
    HEAP_SETTINGS_LATEST_MS,
    async () => {
      if (!service.isStopping) (await import('./serve-heap.js')).applyHeapSettings();
    },
    (err) => log.error({ err }, 'applying the heap settings failed'),
  );
  service.ready();
  log.info({ state: service.store.statePath, socket: service.socket, stdio: o.stdio, durability: o.durability, lockFd: o.lockFd, exitWhenIdleMs: o.exitWhenIdleMs, heap, codeCache: codeCacheUse() }, 'serving');
  if (o.announce) announce(service.store.statePath, service.socket, o.stdio);
}

function announce(statePath: string, socket: string | undefined, stdio: boolean): void {
  const rel = (p: string): string => (path.relative(process.cwd(), p).startsWith('..') ? p : path.relative(process.cwd(), p));
  const cli = rel(process.argv[1] ?? 'herrscher-state');
  process.stderr.write(
    `herrscher-state: serving ${statePath}${socket ? ` on ${socket}` : ''}${stdio ? ' and stdio' : ''}\n` +
      (socket ? `try: node ${cli} call session/list --socket ${rel(socket)}\n` : ''),
  );
}

/**
 * `signal` opens --log-file again, for log rotation (logrotate renames the file, then signals):
 * "log reopened" is the new file's first line. SIGHUP keeps its meaning (stop) and SIGUSR1 is
 * node's debugger. Listened to from the start, since the signal's default is to end the process.
 */
function reopenLogOn(signal: NodeJS.Signals, logging: Logging, file: string | undefined): void {
  process.on(signal, () => {
    void logging.reopen().then((err) => {
      if (err === false) logging.log.info({ signal }, `${signal}: no --log-file to reopen (the log goes to stderr)`);
      else if (err) {
        // The file that was open is the one just rotated away or removed: no one reads it now.
        process.stderr.write(`herrscher-state: ${signal}: reopening the log file ${file} failed: ${err.message}; the log goes on to the file that was open\n`);
        logging.log.error({ err, signal, file }, 'reopening the log file failed: the log goes on to the file that was open');
      }
      else logging.log.info({ signal, file }, 'log reopened');
    });
  });
}
