// The typed client: one async function per method, derived from the method table (camelCase of
// the wire name: session/add → sessionAdd), and connect() to a server's unix socket (spawn.ts
// starts a server of its own over stdio). What an editor extension, a bridge written in
// TypeScript and our own tests use.
import path from 'node:path';
import type { FunctionName } from '../protocol/function-name.js';
import type { Framing } from '../transport/frame-decoder.js';
import { ErrorCodes } from '../protocol/error-codes.js';
import type { FoundSocket } from '../transport/discovery.js';
import { describeSource, discoverSocket, servesState, stateToName } from '../transport/discovery.js';
import { connectUnixSocket, SocketError } from '../transport/socket.js';
import { assertFolderPrivate, assertSocketTrusted } from '../transport/socket-folder.js';
import type { CallOptions } from './call-options.js';
import { ClientCore } from './client-core.js';
import type { MethodName, MethodParams, MethodResults, NotificationName, NotificationParams } from './contract-types.js';
import { ConnectionClosedError } from './client-errors.js';
import { Link, LOCAL_CODES } from './link.js';
import { makeClient } from './make-client.js';
import { ResponseError } from './response-error.js';
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
  /**
   * The socket the current connection goes to and the step of the discovery rule that chose it
   * (`source` 'shared': the per-user shared server); undefined for a spawned server's stdio.
   */
  readonly server: FoundSocket | undefined;
  /** Why the client is closed for good (the connection ended and it does not reconnect); undefined while open or reconnecting. */
  readonly closed: Error | undefined;
  /** Ends the connection (and, for a spawned server, closes its stdin and waits for its exit). */
  close(): Promise<void>;
}

export type { Framing } from '../transport/frame-decoder.js';
export type { FoundSocket, SocketSource } from '../transport/discovery.js';
export type { CallOptions } from './call-options.js';
export type { ConnectionState, ReconnectOptions } from './reconnect-options.js';

export interface ConnectOptions {
  /**
   * The server's socket. Default: $HERRSCHER_STATE_SOCKET, else the socket recorded by the live
   * server of `state`, else the per-user shared server's socket when it exists, else
   * herrscher-state.sock in the per-user default folder.
   */
  socket?: string;
  /**
   * The state file wanted. Its server is found when no socket is given, and whatever socket is
   * reached, connect() names the file in `initialize` (its `state` param, before anything else):
   * the shared server binds the connection to it; a dedicated server of another state is left
   * with "no server for <state>" (SocketError ENOSERVER), rather than talked to. When the state's
   * lock is held by its own server (StateLocked with that server's socket), connect() dials that
   * socket instead, once. Default: on the shared server, defaultStatePath(env); elsewhere, as
   * `serve` decided it, unchecked.
   */
  state?: string;
  framing?: Framing;
  /** How long to wait for the socket to accept (default 2000 ms); with `wait`, for a server to answer. */
  timeoutMs?: number;
  /**
   * Wait for a server that is not there yet (starting, restarting): try again, 50 ms doubling to
   * 1 s apart, while the socket is missing, refuses, (with a state) is not that state's server,
   * or answers that another process holds the state's lock without naming its server (one that
   * is starting), until `timeoutMs` has passed, as the Go client's DialOptions.Wait. Default off:
   * the first "no server" rejects at once.
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
  const first = await (options.wait ? dialWaiting(options) : dial());
  const state = options.state === undefined ? undefined : path.resolve(options.state);
  return makeClient(new ClientCore(first, { dial, callTimeoutMs: options.callTimeoutMs, reconnect }), state);
}

/** The SocketError codes of a server that is starting: no socket yet, a stale one, another's server there. */
const NOT_THERE_YET = new Set<string>(['ENOENT', 'ECONNREFUSED', 'ENOSERVER']);

/** connect({ wait }): dials until a server answers or timeoutMs has passed. */
async function dialWaiting(options: ConnectOptions): Promise<Link> {
  const bound = options.timeoutMs ?? 2000;
  const deadline = Date.now() + bound;
  let previous: SocketError | ResponseError | undefined;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
    try {
      return await dialSocket({ ...options, timeoutMs: Math.max(1, deadline - Date.now()) });
    } catch (err) {
      if (!notThereYet(err)) throw err;
      const left = deadline - Date.now();
      if (left <= 0) {
        // The last attempt ran into the wait's own end (its connect or its initialize was given
        // only what was left, down to 1 ms): it says less than the one before it, which ended
        // on its own (the server's answer), so that one is told.
        const told = previous ?? err;
        const waited = `${told.message} (waited ${bound} ms)`;
        throw told instanceof SocketError ? new SocketError(waited, told.code) : new ResponseError(told.code, waited, told.data);
      }
      previous = err;
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)));
    }
  }
}

/**
 * What a server that is starting looks like: no socket yet, a stale one, another's server there,
 * or (the shared server's answer) a lock another process holds without a server recorded yet.
 */
function notThereYet(err: unknown): err is SocketError | ResponseError {
  if (err instanceof SocketError) return NOT_THERE_YET.has(err.code ?? '');
  return err instanceof ResponseError && err.code === ErrorCodes.StateLocked && lockHoldersSocket(err) === undefined;
}

/** The socket of the server that holds a state's lock, as a StateLocked answer names it. */
function lockHoldersSocket(err: unknown): string | undefined {
  if (!(err instanceof ResponseError) || err.code !== ErrorCodes.StateLocked) return undefined;
  const socket = (err.data as { socket?: unknown } | undefined)?.socket;
  return typeof socket === 'string' && socket !== '' ? socket : undefined;
}

/**
 * One connection to the server the discovery rule finds now, after the socket's checks, named
 * the state it is for. A shared server that answers that the state's own server holds its lock
 * names that server's socket: it is dialled instead, once (its answer is final).
 */
async function dialSocket(options: ConnectOptions): Promise<Link> {
  const env = options.env ?? process.env;
  const found = await discoverSocket({ socket: options.socket, state: options.state, env });
  const state = stateToName(found, options.state, env);
  try {
    return await introduce(await openSocket(found, options, state), found, state, options);
  } catch (err) {
    const holder = lockHoldersSocket(err);
    if (holder === undefined || state === undefined) throw err;
    const there: FoundSocket = { path: holder, source: 'record' };
    return introduce(await openSocket(there, options, state), there, state, options);
  }
}

/** How to start what was not found: the shared server where its socket was tried, else the state's own. */
function startHint(found: FoundSocket, state: string | undefined): string {
  if (found.source === 'shared') return 'herrscher-state serve --shared';
  return state === undefined ? `herrscher-state serve --socket ${found.path}` : `herrscher-state serve --state ${state}`;
}

/** "no server for <state>: <why>", the start hint last (one hint, never two). */
function noServerFor(found: FoundSocket, state: string, why: string): SocketError {
  return new SocketError(`no server for ${state}: ${why.replace(/; start one with `[^`]*`$/, '')}; start one with \`${startHint(found, state)}\``, 'ENOSERVER');
}

/** A connection to `found`, after the socket's checks; nothing sent yet. */
async function openSocket(found: FoundSocket, options: ConnectOptions, state: string | undefined): Promise<Link> {
  try {
    if (found.source === 'default' || found.source === 'shared') await assertDefaultFolder(path.dirname(found.path));
    await assertSocketTrusted(found.path);
  } catch (err) {
    throw err instanceof SocketError ? new SocketError(`${err.message} [socket ${describeSource(found)}]`, err.code) : err;
  }
  let socket;
  try {
    socket = await connectUnixSocket(found.path, { timeoutMs: options.timeoutMs ?? 2000 });
  } catch (err) {
    if (!(err instanceof SocketError)) throw err;
    if (options.state !== undefined && state !== undefined) throw noServerFor(found, state, err.message);
    if (found.source === 'shared') throw new SocketError(`${err.message.replace(/; start one with `[^`]*`$/, '')}; start one with \`${startHint(found, state)}\``, err.code);
    throw err;
  }
  const s = socket;
  return new Link(s, s, () => s.destroy(), { framing: options.framing ?? 'lsp', maxMessageBytes: options.maxMessageBytes, where: found });
}

/**
 * Names `state` to the server on `link` (initialize, before anything else) and checks the file
 * it answers it serves: the socket may be another state's server (the default socket, a stale
 * record whose pid was reused). No state: the link as it is (a dedicated server's own).
 */
async function introduce(link: Link, found: FoundSocket, state: string | undefined, options: ConnectOptions): Promise<Link> {
  if (state === undefined) return link;
  try {
    // With `wait`, timeoutMs is what is left of the wait: a server that accepts and never answers
    // ends in the wait's bound too.
    const bound = options.callTimeoutMs ?? (options.wait ? options.timeoutMs : undefined);
    const { statePath } = (await link.request('initialize', { state }, bound)) as { statePath: string };
    if (await servesState(statePath, state)) return link;
    throw noServerFor(found, state, `the server at ${describeSource(found)} serves ${statePath}; nothing but initialize was sent to it`);
  } catch (err) {
    link.fail(new ConnectionClosedError('closed: not the server of the state asked for'));
    if (err instanceof SocketError) throw err;
    if (err instanceof ResponseError && err.code === ErrorCodes.NotThisState) {
      throw noServerFor(found, state, `the server at ${describeSource(found)} serves another state (${err.message}); nothing but initialize was sent to it`);
    }
    // The server answered but cannot serve this state (its lock is held, its file is damaged…):
    // its code and data stay, for a caller that decides by the code.
    if (err instanceof ResponseError && !LOCAL_CODES.has(err.code)) {
      throw new ResponseError(err.code, `${state}: the server at ${describeSource(found)} cannot serve it: ${err.message}`, err.data);
    }
    throw Object.assign(noServerFor(found, state, `the server at ${describeSource(found)} did not say which state it serves: ${(err as Error).message}`), { cause: err });
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
