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
// The server is the Service `serve` runs (src/server/service.ts), listening on dir/s.sock with
// its record written; it stops the way `serve` stops: in t.after the test's clients leave, then
// the Service's ordered stop runs (the listener and the record go, the answers still owed are
// given, the store closes, awaited, so no background work outlives the test, the connections
// end). `srv.close()` does the same earlier (idempotent), e.g. to reopen the dir with
// `startServer(t, { dir })`. `exit`, the stdio EOF and the state dir's removal stop it as in
// `serve`, and `srv.exited` resolves with the code `serve` would exit with.
// Options: `lifecycleOwner: 'stdio'` as `serve --stdio` sets it; `store` for StoreOptions (io
// seam, durability, walCheckpointBytes); `maxMessageBytes`; `logLevel` (default 'debug');
// `feed` bounds; `onConnection` to watch the server side of each connection.
import type net from 'node:net';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import type { StateClient } from '../../src/client/client.js';
import { connect } from '../../src/client/client.js';
import type { ServerConnection } from '../../src/server/connection.js';
import type { ServerOptions, StateServer } from '../../src/server/server.js';
import { Service } from '../../src/server/service.js';
import type { Store, StoreOptions } from '../../src/store/store.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../src/transport/limits.js';
import type { Ctx } from './cli.js';
import { statePathIn, tempDir } from './temp-dir.js';
import type { Framing } from './wire.js';
import { connectRaw, RawClient } from './wire.js';

export type { Ctx } from './cli.js';

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
  /** Bounds of the change feed. */
  feed?: ServerOptions['feed'];
  /** Told of every connection the server accepts (after the server's own listeners are on it). */
  onConnection?: (conn: ServerConnection) => void;
  /** ServerOptions.presence, as `serve --exit-when-idle` passes its IdleWatch. */
  presence?: ServerOptions['presence'];
  /**
   * Where to listen instead of dir/s.sock: a path, or a found socket as `serve` passes it (a
   * `default` one gets its folder made and checked first, as `serve` does).
   */
  socket?: Parameters<Service['listen']>[0];
}

export interface InProcessServer {
  readonly dir: string;
  /** dir/state.json */
  readonly state: string;
  /** The unix socket the server listens on (dir/s.sock unless `options.socket` said otherwise). */
  readonly socket: string;
  /** The Service that runs it, as `serve` runs one. */
  readonly service: Service;
  readonly store: Store;
  readonly server: StateServer;
  /** Every line the server logged, parsed, in order. */
  readonly logs: LogLine[];
  /** Resolves with the code once the server stopped by itself (`exit`, stdio EOF, its dir removed), as `serve` would exit. */
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

/** How long the stop waits for answers still owed (serve: STOP_GRACE_MS, 5 s). */
const TEST_STOP_GRACE_MS = 2000;

/** Why the harness stops a server when the test ends (not an exit: `exited` stays pending). */
const TEST_ENDED = 'test ended';

/** Starts a server in `options.dir` (default: a fresh temp dir); it stops when the test ends. */
export async function startServer(t: Ctx, options: StartOptions = {}): Promise<InProcessServer> {
  const dir = options.dir ?? tempDir();
  const state = statePathIn(dir);
  const logs: LogLine[] = [];
  const log = pino({ level: options.logLevel ?? 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
  const service = await Service.open({
    state,
    log,
    version: options.version ?? 'test',
    ...(options.store ? { store: options.store } : {}),
    framing: { maxMessageBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES },
    lifecycleOwner: options.lifecycleOwner,
    // The one difference from `serve`: a test that leaves a stalled client waits 2 s for it, not 5.
    stopGraceMs: TEST_STOP_GRACE_MS,
    ...(options.feed ? { feed: options.feed } : {}),
    ...(options.onConnection ? { onConnection: options.onConnection } : {}),
    ...(options.presence ? { presence: options.presence } : {}),
  });
  const clients: StateClient[] = [];
  const sockets: net.Socket[] = [];
  const pipes: PassThrough[] = [];
  const exited = service.stopped.then(({ code, why }) => (why === TEST_ENDED ? new Promise<number>(() => undefined) : code));
  // Once the service stopped, whatever stopped it, the test's own ends of the streams close too.
  void service.stopped.then(() => {
    for (const p of pipes) p.end();
  });
  let socket: string;
  try {
    socket = await service.listen(options.socket ?? `${dir}/s.sock`);
  } catch (err) {
    await service.discard();
    throw err;
  }
  // The test's clients leave first (as a host's bridges would), then the server stops as `serve` does.
  const close = async (): Promise<void> => {
    await Promise.all(clients.map((c) => c.close()));
    for (const s of sockets) s.destroy();
    await service.stop(0, TEST_ENDED);
  };
  t.after(close);

  return {
    dir,
    state,
    socket,
    service,
    store: service.store,
    server: service.server,
    logs,
    exited,
    async client(framing: Framing = 'lsp') {
      const c = await connect({ socket, framing, timeoutMs: 10_000 });
      clients.push(c);
      return c;
    },
    async raw(framing: Framing) {
      const c = await connectRaw(socket, framing);
      sockets.push(c.socket);
      return c;
    },
    stdio(framing: Framing) {
      const toServer = new PassThrough();
      const fromServer = new PassThrough();
      pipes.push(toServer, fromServer);
      service.attachStreams(toServer, fromServer, 'stdio');
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
