// The in-process server harness: the real StateServer over a real unix socket, in the test
// process, in a fresh temp dir per test. Use it for every protocol test; spawn the built CLI
// (helpers/cli.ts) only where the process boundary itself is the subject (stdio, signals, the
// lock held by another process, exit codes, stdout purity).
//
//   import { startServer } from '../helpers/server.js';
//
//   test('…', async (t) => {
//     const srv = await startServer(t);                 // store + server + socket in a temp dir
//     const client = await srv.client();                // typed client (src/client), LSP framing
//     const raw = await srv.raw('ndjson');              // exact bytes in, parsed messages out
//     const host = srv.stdio('lsp');                    // the `serve --stdio` host's connection
//     await client.sessionAdd({ session: { name: 'a' } });
//     assert.equal((await raw.call('session/find', { name: 'a' }) as …).session.name, 'a');
//     srv.logs.filter((l) => l.level >= 50)             // what the server logged (pino objects)
//   });
//
// Everything is closed in t.after, in the order `serve` stops: clients, the listener, the
// answers still owed, the store (awaited: its queued writes and the log's checkpoint finish
// before the test ends, so no background work outlives it), then the connections. `srv.close()`
// does the same earlier (idempotent), e.g. to reopen the dir with `startServer(t, { dir })`.
// `exit` behaves as in `serve`: it stops the server, and `srv.exited` resolves with the code.
// Options: `lifecycleOwner: 'stdio'` as `serve --stdio` sets it; `store` for StoreOptions (io
// seam, durability, walCheckpointBytes); `maxMessageBytes`; `logLevel` (default 'debug');
// `onConnection` to watch the server side of each connection.
import type net from 'node:net';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import type { StateClient } from '../../src/client/client.js';
import { connect } from '../../src/client/client.js';
import type { ServerConnection } from '../../src/server/connection.js';
import type { ServerOptions } from '../../src/server/server.js';
import { StateServer } from '../../src/server/server.js';
import type { StoreOptions } from '../../src/store/store.js';
import { Store } from '../../src/store/store.js';
import { createFramedTransport } from '../../src/transport/framing.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../src/transport/limits.js';
import type { UnixSocketListener } from '../../src/transport/socket.js';
import { listenUnixSocket } from '../../src/transport/socket.js';
import type { Ctx } from './cli.js';
import { statePathIn, tempDir } from './temp-dir.js';
import type { Framing } from './wire.js';
import { connectRaw, RawClient } from './wire.js';

export type { Ctx } from './cli.js';

/** How long close() waits for answers still owed before it ends the connections anyway (serve: 5 s). */
const CLOSE_GRACE_MS = 2000;

/** One pino log line as the server wrote it (`level`: 30 info, 40 warn, 50 error, 60 fatal). */
export interface LogLine {
  level: number;
  msg?: string;
  err?: { message?: string; code?: string; type?: string };
  [key: string]: unknown;
}

export interface StartOptions {
  /** The folder of state.json; default a fresh temp dir. Reuse one to "restart" the server. */
  dir?: string;
  /** Options of Store.open; `warn` defaults to logging at warn, as `serve` does. */
  store?: StoreOptions;
  lifecycleOwner?: ServerOptions['lifecycleOwner'];
  maxMessageBytes?: number;
  logLevel?: pino.Level;
  version?: string;
  /** Told of every connection the server accepts (after the server's own listeners are on it). */
  onConnection?: (conn: ServerConnection) => void;
  /** ServerOptions.presence, as `serve --exit-when-idle` passes its IdleWatch. */
  presence?: ServerOptions['presence'];
}

export interface InProcessServer {
  readonly dir: string;
  /** dir/state.json */
  readonly state: string;
  /** The unix socket the server listens on (dir/s.sock). */
  readonly socket: string;
  readonly store: Store;
  readonly server: StateServer;
  /** Every line the server logged, parsed, in order. */
  readonly logs: LogLine[];
  /** Resolves with the code once `exit` (or stdio EOF) stopped the server, as `serve` would exit. */
  readonly exited: Promise<number>;
  /** A typed client on the socket, closed with the server. */
  client(framing?: Framing): Promise<StateClient>;
  /** A raw client on a fresh socket connection, destroyed with the server. */
  raw(framing: Framing): Promise<RawClient & { socket: net.Socket }>;
  /**
   * A raw client on an in-memory connection the server sees as `stdio` (the host of `serve
   * --stdio`). Its EOF (`rpc.end()`) stops the server with 0, as stdin EOF does.
   */
  stdio(framing: Framing): RawClient;
  /** Stops as `serve` does and awaits the store's close; idempotent. */
  close(): Promise<void>;
}

/** Starts a server in `options.dir` (default: a fresh temp dir); it stops when the test ends. */
export async function startServer(t: Ctx, options: StartOptions = {}): Promise<InProcessServer> {
  const dir = options.dir ?? tempDir();
  const state = statePathIn(dir);
  const maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const logs: LogLine[] = [];
  const log = pino({ level: options.logLevel ?? 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
  const store = await Store.open(state, { warn: (message, err) => log.warn({ err }, message), ...options.store });

  const clients: StateClient[] = [];
  const sockets: net.Socket[] = [];
  const pipes: PassThrough[] = [];
  let listener: UnixSocketListener | undefined;
  let stopping: Promise<void> | undefined;
  let resolveExit!: (code: number) => void;
  const exited = new Promise<number>((resolve) => (resolveExit = resolve));

  // serve.ts's stop(), without process.exit: the same order, every step awaited.
  const stop = (code: number | undefined, why: string): Promise<void> =>
    (stopping ??= (async () => {
      log.info({ why }, 'stopping');
      await Promise.all(clients.map((c) => c.close()));
      for (const s of sockets) s.destroy();
      await listener?.close();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([server.idle(), new Promise((r) => (timer = setTimeout(r, CLOSE_GRACE_MS)))]);
      clearTimeout(timer);
      await store.close();
      server.disposeAll();
      for (const p of pipes) p.end();
      log.info({ code }, 'stopped');
      if (code !== undefined) resolveExit(code);
    })());

  const server = new StateServer(store, log, {
    version: options.version ?? 'test',
    onExit: (code) => void stop(code, 'exit notification'),
    lifecycleOwner: options.lifecycleOwner,
    ...(options.presence ? { presence: options.presence } : {}),
  });
  try {
    listener = await listenUnixSocket(`${dir}/s.sock`, (socket) => {
      const tr = createFramedTransport(socket, socket, { maxMessageBytes, onProtocolError: (e) => log.debug(e, 'protocol error answered') });
      const conn = server.connect(tr.reader, tr.writer, 'socket');
      conn.onClose(() => void conn.idle().then(() => tr.close()));
      options.onConnection?.(conn);
    });
  } catch (err) {
    await store.close();
    throw err;
  }
  const close = (): Promise<void> => stop(undefined, 'test ended');
  t.after(close);

  return {
    dir,
    state,
    socket: listener.path,
    store,
    server,
    logs,
    exited,
    async client(framing: Framing = 'lsp') {
      const c = await connect({ socket: listener.path, framing, timeoutMs: 10_000 });
      clients.push(c);
      return c;
    },
    async raw(framing: Framing) {
      const c = await connectRaw(listener.path, framing);
      sockets.push(c.socket);
      return c;
    },
    stdio(framing: Framing) {
      const toServer = new PassThrough();
      const fromServer = new PassThrough();
      pipes.push(toServer, fromServer);
      const tr = createFramedTransport(toServer, fromServer, { maxMessageBytes, onProtocolError: (e) => log.debug(e, 'protocol error answered') });
      const conn = server.connect(tr.reader, tr.writer, 'stdio');
      conn.onClose(() => void conn.idle().then(() => stop(0, 'stdin closed')));
      options.onConnection?.(conn);
      return new RawClient(fromServer, toServer, framing);
    },
    close,
  };
}

/** The lines logged at `error` or above. */
export const errorsIn = (logs: readonly LogLine[]): LogLine[] => logs.filter((l) => l.level >= 50);

/**
 * The in-process counterpart of "SIGTERM, then exit 0": stops the server (the store's close
 * awaited, so a failing close rejects) and asserts nothing was logged at `minLevel` (default
 * error) or above.
 */
export async function closeClean(srv: InProcessServer, minLevel = 50): Promise<void> {
  await srv.close();
  const bad = srv.logs.filter((l) => l.level >= minLevel);
  if (bad.length > 0) throw new Error(`the server logged at level ${minLevel} or above:\n${bad.map((l) => JSON.stringify(l)).join('\n')}`);
}
