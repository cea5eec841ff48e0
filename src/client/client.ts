// The typed client: one async function per method, derived from the method table (camelCase of
// the wire name: session/add → sessionAdd), over a socket or a spawned server's stdio. What an
// editor extension, a bridge written in TypeScript and our own tests use.
import { spawn as spawnChild } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { FunctionName } from '../protocol/function-name.js';
import { functionName } from '../protocol/function-name.js';
import type { Framing } from '../transport/frame-decoder.js';
import { describeSource, discoverSocket, servesState } from '../transport/discovery.js';
import { connectUnixSocket, SocketError } from '../transport/socket.js';
import { assertFolderPrivate, assertSocketTrusted } from '../transport/socket-folder.js';
import { childCommand } from './child-command.js';
import { findCli, resolutionBases } from './cli-path.js';
import type { CallOptions } from './call-options.js';
import { ClientCore } from './client-core.js';
import type { MethodName, MethodParams, MethodResults, NotificationName, NotificationParams } from './contract-types.js';
import { ConnectionClosedError, START_ERROR_STDERR_LINES, StartError } from './client-errors.js';
import { Link } from './link.js';
import { stderrTail } from './stderr-tail.js';
import { methodNames } from './method-names.js';
import type { ConnectionState, ReconnectOptions } from './reconnect-options.js';

type Params<M extends MethodName> = MethodParams[M];
type Result<M extends MethodName> = MethodResults[M];

/** The connection underneath: for a raw request or notification the typed functions do not cover. */
export interface RawConnection {
  sendRequest(method: string, params?: unknown): Promise<unknown>;
  sendNotification(method: string, params?: unknown): Promise<void>;
}

/** One function per method; params are optional where the method needs none. */
export type MethodFunctions = {
  [M in MethodName as FunctionName<M>]: undefined extends Params<M>
    ? (params?: Params<M>, options?: CallOptions) => Promise<Result<M>>
    : (params: Params<M>, options?: CallOptions) => Promise<Result<M>>;
};

export interface StateClient extends MethodFunctions {
  /** Calls a method by wire name. */
  call<M extends MethodName>(method: M, params?: Params<M>, options?: CallOptions): Promise<Result<M>>;
  /**
   * Subscribes to a server notification (watch/*: session/didChange, transcript/didAppend…).
   * Handlers stay registered across reconnections.
   */
  onNotification<N extends NotificationName>(method: N, handler: (params: NotificationParams[N]) => void): { dispose(): void };
  /** Told when the connection is lost, each reconnection attempt, when it is restored, and when the client is closed for good. */
  onConnectionState(listener: (state: ConnectionState) => void): { dispose(): void };
  /** The current connection (a reconnection replaces it): vscode-jsonrpc's MessageConnection. */
  readonly connection: RawConnection;
  /** Why the client is closed for good (the connection ended and it does not reconnect); undefined while open or reconnecting. */
  readonly closed: Error | undefined;
  /** Ends the connection (and, for a spawned server, closes its stdin and waits for its exit). */
  close(): Promise<void>;
}

export type { Framing } from '../transport/frame-decoder.js';
export type { CallOptions } from './call-options.js';
export type { ConnectionState, ReconnectOptions } from './reconnect-options.js';

function makeClient(core: ClientCore): StateClient {
  const call = (method: string, params?: unknown, options?: CallOptions): Promise<unknown> => core.call(method, params, options);
  const client: Record<string, unknown> = {
    call,
    onNotification: (method: string, handler: (params: unknown) => void) => core.onNotification(method, handler),
    onConnectionState: (listener: (s: ConnectionState) => void) => core.onConnectionState(listener),
    close: () => core.close(),
  };
  Object.defineProperty(client, 'connection', { get: () => core.connection, enumerable: true });
  Object.defineProperty(client, 'closed', { get: () => core.closed, enumerable: true });
  for (const method of methodNames) client[functionName(method)] = (params?: unknown, options?: CallOptions) => call(method, params, options);
  return client as unknown as StateClient;
}

export interface ConnectOptions {
  /**
   * The server's socket. Default: $HERRSCHER_STATE_SOCKET, else the socket recorded by the live
   * server of `state`, else herrscher-state.sock in the per-user default folder.
   */
  socket?: string;
  /**
   * The state file whose server is wanted: its server is found when no socket is given, and
   * whatever socket is reached, connect() asks the server (`initialize`, before anything else)
   * which state file it serves and fails with "no server for <state>" when it is another one,
   * rather than talk to another state's server (default: as `serve` decides it, unchecked).
   */
  state?: string;
  framing?: Framing;
  /** How long to wait for the socket to accept (default 2000 ms); with `wait`, for a server to answer. */
  timeoutMs?: number;
  /**
   * Wait for a server that is not there yet (starting, restarting): try again, 50 ms doubling to
   * 1 s apart, while the socket is missing, refuses, or (with `state`) is not that state's
   * server, until `timeoutMs` has passed, as the Go client's DialOptions.Wait. Default off: the
   * first "no server" rejects at once.
   */
  wait?: boolean;
  /**
   * A bound on every call, in ms, waiting for a reconnection included; a call passes `{timeoutMs}`
   * to set its own. Default: none (a call waits for its reply or for the connection to end).
   */
  callTimeoutMs?: number;
  /**
   * Reconnect when the connection is lost (the server restarted): `true` for the default backoff
   * (100 ms doubling to 5 s, until close()). Default off: calls in flight when the connection is
   * lost are rejected either way; with it, later calls wait for the new connection, and every
   * subscription is made again with `since`, so notification handlers miss nothing.
   */
  reconnect?: boolean | ReconnectOptions;
  /** The largest reply accepted, in bytes (default the server's default limit, 64 MiB). */
  maxMessageBytes?: number;
  /** The environment the rule reads (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Connects to a running server's unix socket, found by the discovery rule. Before anything is
 * sent, the socket and its folder must be the user's own and the folder not writable by others:
 * a socket another user put there is refused (SocketError EUNSAFE), never written to.
 */
export async function connect(options: ConnectOptions = {}): Promise<StateClient> {
  const dial = (): Promise<Link> => dialSocket(options);
  const reconnect = options.reconnect === true ? {} : options.reconnect === false ? undefined : options.reconnect;
  return makeClient(new ClientCore(await (options.wait ? dialWaiting(options) : dial()), { dial, callTimeoutMs: options.callTimeoutMs, reconnect }));
}

/** What a server that is starting looks like: no socket yet, a stale one, another's server there. */
const NOT_THERE_YET = new Set<string>(['ENOENT', 'ECONNREFUSED', 'ENOSERVER']);

/** connect({ wait }): dials until a server answers or timeoutMs has passed. */
async function dialWaiting(options: ConnectOptions): Promise<Link> {
  const bound = options.timeoutMs ?? 2000;
  const deadline = Date.now() + bound;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
    try {
      return await dialSocket({ ...options, timeoutMs: Math.max(1, deadline - Date.now()) });
    } catch (err) {
      if (!(err instanceof SocketError) || !NOT_THERE_YET.has(err.code ?? '')) throw err;
      const left = deadline - Date.now();
      if (left <= 0) throw new SocketError(`${err.message} (waited ${bound} ms)`, err.code);
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)));
    }
  }
}

/** One connection to the server the discovery rule finds now, after the socket's checks. */
async function dialSocket(options: ConnectOptions): Promise<Link> {
  const found = await discoverSocket({ socket: options.socket, state: options.state, env: options.env });
  try {
    if (found.source === 'default') await assertDefaultFolder(path.dirname(found.path));
    await assertSocketTrusted(found.path);
  } catch (err) {
    throw err instanceof SocketError ? new SocketError(`${err.message} [socket ${describeSource(found)}]`, err.code) : err;
  }
  const noServerFor = (why: string): SocketError =>
    new SocketError(`no server for ${options.state}: ${why.replace(/; start one with `[^`]*`$/, '')}; start one with \`herrscher-state serve --state ${options.state}\``, 'ENOSERVER');
  let socket;
  try {
    socket = await connectUnixSocket(found.path, { timeoutMs: options.timeoutMs ?? 2000 });
  } catch (err) {
    throw options.state !== undefined && err instanceof SocketError ? noServerFor(err.message) : err;
  }
  const s = socket;
  const link = new Link(s, s, () => s.destroy(), { framing: options.framing ?? 'lsp', maxMessageBytes: options.maxMessageBytes });
  if (options.state === undefined) return link;
  // The socket of a state with no live server may be another state's (the default socket, a
  // stale record whose pid was reused): ask before anything else is sent.
  try {
    const { statePath } = (await link.request('initialize', {}, options.callTimeoutMs)) as { statePath: string };
    if (await servesState(statePath, options.state)) return link;
    throw noServerFor(`the server at ${describeSource(found)} serves ${statePath}; nothing but initialize was sent to it`);
  } catch (err) {
    link.fail(new ConnectionClosedError('closed: not the server of the state asked for'));
    throw err instanceof SocketError ? err : noServerFor(`the server at ${describeSource(found)} did not say which state it serves: ${(err as Error).message}`);
  }
}

/** The default folder must be private (0700, ours, no symlink); a missing one means no server. */
async function assertDefaultFolder(dir: string): Promise<void> {
  try {
    await assertFolderPrivate(dir);
  } catch (err) {
    if (err instanceof SocketError && err.code === 'ENOENT') return; // connecting then says "no server"
    throw err;
  }
}

export interface SpawnOptions {
  /** The state.json to serve. */
  state: string;
  /** More `serve` arguments (--durability, --log-level, --socket, --no-socket…). */
  args?: string[];
  framing?: Framing;
  /**
   * The CLI to run; default `require.resolve('herrscher-state/cli')` from this module, the bundle it
   * was bundled into, the main script or the working directory, first found.
   */
  cli?: string;
  env?: NodeJS.ProcessEnv;
  /**
   * The Node binary to run the CLI with. Default process.execPath; inside Electron (a VS Code
   * extension host) that is Electron itself, run with ELECTRON_RUN_AS_NODE=1 so it acts as Node.
   */
  node?: string;
  /**
   * An open descriptor of this process on the state's lock file (`<dir>/.<base>.lock`) through
   * which it holds the flock: handed to the server as its fd 3 with `--lock-fd 3`, so a host that
   * holds the lock can still spawn the server (docs/adoption.md).
   */
  lockFd?: number;
  /** A bound on every call, in ms (see ConnectOptions.callTimeoutMs). */
  callTimeoutMs?: number;
}

export interface SpawnedClient extends StateClient {
  readonly child: ChildProcess;
  /** Resolves with the exit code once the server has exited. */
  readonly exited: Promise<number | null>;
}

// import.meta is empty in a CommonJS bundle (esbuild) and absent from our CommonJS build.
const builtCli = (): string => findCli(resolutionBases(import.meta.url));

/** How long a server whose output ended may take to exit before its StartError is given without its exit code. */
const START_EXIT_WAIT_MS = 5000;
/** How long its stderr may stay open after its exit (a child of its own holding it) before the lines are read. */
const START_STDERR_WAIT_MS = 1000;

/**
 * Spawns `herrscher-state serve --stdio` as a child and talks to it over its stdio, as the host
 * does. Its stderr (the server's log) is passed on to this process's stderr. A server that exits
 * before it answers anything (it could not start) rejects every call with a StartError carrying
 * its exit code and the last lines it wrote to stderr.
 */
export function spawn(options: SpawnOptions): SpawnedClient {
  const cmd = childCommand({ ...options, cli: options.cli ?? builtCli() });
  const child = spawnChild(cmd.command, cmd.args, { stdio: cmd.stdio, env: cmd.env });
  const tail = stderrTail(child.stderr as NodeJS.ReadableStream, process.stderr, START_ERROR_STDERR_LINES);
  let startFailure: Error | undefined;
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (err) => {
      // Not started at all (no such binary, no permission): no exit follows.
      startFailure = err;
      resolve({ code: null, signal: null });
    });
  });
  const exited = ended.then(({ code }) => code);
  const explainEarlyEnd = async (reason: Error): Promise<Error> => {
    let timer: NodeJS.Timeout | undefined;
    const bound = (ms: number): Promise<undefined> => new Promise((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
    try {
      const end = await Promise.race([ended, bound(START_EXIT_WAIT_MS)]);
      clearTimeout(timer);
      if (!end) return reason; // still running: the connection broke, not the start
      await Promise.race([tail.ended, bound(START_STDERR_WAIT_MS)]);
      return startError(cmd.command, end, tail.lines(), startFailure);
    } finally {
      clearTimeout(timer);
    }
  };
  const link = new Link(child.stdout as NodeJS.ReadableStream, child.stdin as NodeJS.WritableStream, () => child.stdin?.end(), {
    framing: options.framing ?? 'lsp',
    explainEarlyEnd,
  });
  // A write to a server that already exited fails with EPIPE: the connection's end reports it.
  child.stdin?.on('error', () => undefined);
  const dial = (): Promise<Link> => Promise.reject(new Error('a spawned server is not reconnected'));
  const client = makeClient(new ClientCore(link, { dial, callTimeoutMs: options.callTimeoutMs, afterClose: () => exited.then(() => undefined) }));
  return Object.assign(client, { child, exited }) as SpawnedClient;
}

/** The StartError of a server that ended before it answered: how it ended, and its last words. */
function startError(command: string, end: { code: number | null; signal: NodeJS.Signals | null }, stderr: string[], notStarted: Error | undefined): StartError {
  const lines = stderr.filter((l) => l.trim() !== '');
  if (notStarted) return new StartError(`herrscher-state serve could not be started (${command}): ${notStarted.message}`, null, null, lines);
  const how = end.signal ? `was killed by ${end.signal}` : `exited with code ${end.code}`;
  const said = lines.length > 0 ? `: ${lines[lines.length - 1]}` : ' and wrote nothing to stderr';
  return new StartError(`herrscher-state serve ${how} before it answered${said}`, end.code, end.signal, lines);
}
