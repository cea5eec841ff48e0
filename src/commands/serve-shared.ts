// `herrscher-state serve --shared`: the process around a SharedService (src/server/shared-service.ts):
// logging, signals and the exit code. SIGTERM/SIGINT/SIGHUP and --exit-when-idle end in its one
// ordered stop; another live shared server on the socket ends the start with EXIT.inUse at once,
// its socket untouched.
import path from 'node:path';
import { SharedService } from '../server/shared-service.js';
import type { Durability } from '../store/state-store.js';
import { defaultStatePath } from '../transport/discovery.js';
import { SocketError, sharedSocketPath } from '../transport/socket.js';
import { EXIT } from './command.js';
import type { LogFormat, LogLevel } from './log-options.js';
import { createLogging } from './logger.js';
import { exitOnStartFailure } from './start-failure.js';

export interface ServeSharedOptions {
  /** --socket; default the per-user shared socket (sharedSocketPath). */
  socket?: string;
  durability: Durability;
  maxMessageBytes: number;
  logLevel: LogLevel;
  logFile?: string;
  logFormat?: LogFormat;
  exitWhenIdleMs?: number;
  stateIdleMs?: number;
  version: string;
}

export async function serveShared(o: ServeSharedOptions): Promise<void> {
  const logging = createLogging(o.logLevel, o.logFile, o.logFormat);
  const { log } = logging;
  const socket = o.socket === undefined ? sharedSocketPath() : path.resolve(o.socket);
  const service = new SharedService({
    log,
    version: o.version,
    defaultState: defaultStatePath(),
    store: { durability: o.durability },
    framing: { maxMessageBytes: o.maxMessageBytes },
    ...(o.stateIdleMs !== undefined ? { stateIdleMs: o.stateIdleMs } : {}),
    ...(o.exitWhenIdleMs !== undefined ? { exitWhenIdleMs: o.exitWhenIdleMs } : {}),
  });
  try {
    await service.listen(socket, { makeFolder: o.socket === undefined });
  } catch (err) {
    if (err instanceof SocketError && err.code === 'EADDRINUSE') {
      // A lost start race: the winner serves; a starter dials it on this code.
      log.debug({ err }, 'another shared server listens on the socket');
      logging.flush();
      process.stderr.write(`herrscher-state: another shared server serves ${socket} already (or is starting or stopping there); use that one\n`);
      process.exit(EXIT.inUse);
    }
    exitOnStartFailure(logging, 'socket', socket, err);
  }
  void service.stopped.then(async ({ code }) => {
    await logging.end();
    process.exit(code);
  });
  // As `serve`: the listeners stay for the process's life; a signal during the stop is ignored.
  const onSignal = (signal: NodeJS.Signals): void => {
    if (!service.isStopping) return void service.stop(0, signal);
    log.warn({ signal }, `${signal} ignored: already stopping, to finish the accepted writes (SIGKILL ends the process now)`);
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, onSignal);
  service.ready();
  log.info({ socket: service.socket, shared: true, durability: o.durability, exitWhenIdleMs: o.exitWhenIdleMs, stateIdleMs: o.stateIdleMs }, 'serving');
  // A long-lived process serving many states: the heap settings that keep its memory close to
  // what is live (serve-heap.ts), applied once it listens.
  (await import('./serve-heap.js')).applyHeapSettings();
}
