// `herrscher-state serve`: opens the store, serves it on stdio and/or a unix socket, and owns
// the process lifecycle: stdin EOF, the exit notification and SIGTERM/SIGINT all end in the
// same orderly stop (answer what was received, finish writes, remove the socket, flush logs).
import path from 'node:path';
import { StateServer } from '../server/server.js';
import type { Durability } from '../store/state-store.js';
import { Store } from '../store/store.js';
import { StoreError } from '../store/store-error.js';
import { createFramedTransport } from '../transport/framing.js';
import { defaultSocketPath, listenUnixSocket } from '../transport/socket.js';
import { createStdioTransport } from '../transport/stdio.js';
import type { LogLevel } from './logger.js';
import { createLogging } from './logger.js';

export interface ServeOptions {
  state: string;
  stdio: boolean;
  socket?: string;
  durability: Durability;
  maxMessageBytes: number;
  logLevel: LogLevel;
  logFile?: string;
  announce: boolean;
  version: string;
}

/** How long a stop waits for in-flight requests before it closes connections anyway. */
const STOP_GRACE_MS = 5000;

export async function serve(o: ServeOptions): Promise<void> {
  const { log, flush } = createLogging(o.logLevel, o.logFile);
  let store: Store;
  try {
    store = await Store.open(o.state, { durability: o.durability, warn: (message, err) => log.warn({ err }, message) });
  } catch (err) {
    const msg = err instanceof StoreError ? err.message : (err as Error).message;
    log.fatal({ err }, 'cannot open the state');
    flush();
    process.stderr.write(`herrscher-state: ${msg}\n`);
    process.exit(1);
  }

  let stopping: Promise<void> | undefined;
  let listener: { close(): Promise<void>; path: string } | undefined;
  const stop = (code: number, why: string): Promise<void> =>
    (stopping ??= (async () => {
      log.info({ why }, 'stopping');
      await listener?.close().catch((err: unknown) => log.warn({ err }, 'closing the socket failed'));
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
  });
  process.once('SIGTERM', () => void stop(0, 'SIGTERM'));
  process.once('SIGINT', () => void stop(0, 'SIGINT'));
  // A closed terminal or a supervisor's reload signal: the same orderly stop, not death by 129.
  process.once('SIGHUP', () => void stop(0, 'SIGHUP'));

  if (o.stdio) {
    // The stdout guard sends any stray write (a dependency's console.log) to stderr: only frames reach the host.
    const t = createStdioTransport({ maxMessageBytes: o.maxMessageBytes, onProtocolError: (e) => log.debug(e, 'protocol error answered') });
    const conn = server.connect(t.reader, t.writer, 'stdio');
    // stdin EOF means the host is gone: answer what it sent, finish the writes, exit 0.
    conn.onClose(() => {
      void conn.idle().then(() => stop(0, 'stdin closed'));
    });
  }
  const socketPath = o.socket ?? (o.stdio ? undefined : defaultSocketPath(store.getState().instanceID || undefined));
  if (socketPath) {
    try {
      listener = await listenUnixSocket(socketPath, (socket) => {
        const t = createFramedTransport(socket, socket, {
          maxMessageBytes: o.maxMessageBytes,
          onProtocolError: (e) => log.debug(e, 'protocol error answered'),
        });
        const conn = server.connect(t.reader, t.writer, 'socket');
        // The client finished sending (or left): answer what it sent, then end our side.
        conn.onClose(() => void conn.idle().then(() => t.close()));
      });
    } catch (err) {
      log.fatal({ err }, 'cannot listen');
      process.stderr.write(`herrscher-state: ${(err as Error).message}\n`);
      await store.close();
      flush();
      process.exit(1);
    }
  }
  log.info({ state: store.statePath, socket: listener?.path, stdio: o.stdio, durability: o.durability }, 'serving');
  if (o.announce) {
    const rel = (p: string): string => (path.relative(process.cwd(), p).startsWith('..') ? p : path.relative(process.cwd(), p));
    const cli = rel(process.argv[1] ?? 'herrscher-state');
    process.stderr.write(
      `herrscher-state: serving ${store.statePath}${listener ? ` on ${listener.path}` : ''}${o.stdio ? ' and stdio' : ''}\n` +
        (listener ? `try: node ${cli} call session/list --socket ${rel(listener.path)}\n` : ''),
    );
  }
}
