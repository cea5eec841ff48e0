// The one rule that finds a server, used by `serve` (where to listen), the CLI commands and the
// client library's connect() (where to connect):
//   an explicit socket > $HERRSCHER_STATE_SOCKET > the socket recorded by the live server of the
//   state file named (--state, else the default state path) > the per-user default folder's
//   herrscher-state[-<instanceID>].sock.
// docs/adoption.md explains each step.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readLiveServerRecord } from './server-record.js';
import { defaultSocketPath, SUN_PATH_BYTES } from './socket.js';

/** Where the state lives when --state is not given, as Herrscher decides it (core/host/serve.go). */
export function defaultStatePath(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.HERRSCHER_STATE_DIR;
  return dir ? path.join(dir, 'state.json') : path.join(os.homedir(), '.config', 'herrscher', 'state.json');
}

export type SocketSource = 'explicit' | 'env' | 'record' | 'default';

export interface FoundSocket {
  path: string;
  /** Which step of the rule gave it: an error message can say why this path was tried. */
  source: SocketSource;
}

export interface DiscoverOptions {
  /** The socket the caller named (--socket, connect({ socket })). */
  socket?: string;
  /** The state file whose server the caller wants (--state); default defaultStatePath(env). */
  state?: string;
  env?: NodeJS.ProcessEnv;
}

/** Where a client connects: the rule above, first step that applies. */
export async function discoverSocket(o: DiscoverOptions = {}): Promise<FoundSocket> {
  const env = o.env ?? process.env;
  if (o.socket) return { path: path.resolve(o.socket), source: 'explicit' };
  if (env.HERRSCHER_STATE_SOCKET) return { path: path.resolve(env.HERRSCHER_STATE_SOCKET), source: 'env' };
  const record = await readLiveServerRecord(o.state ?? defaultStatePath(env));
  if (record) return { path: record.socket, source: 'record' };
  return { path: defaultSocketPath(undefined, env), source: 'default' };
}

/**
 * Where a server listens: the same rule without the record step (that would be itself). The
 * default name carries the state's instance id, as Herrscher names its own sockets.
 */
export function serveSocket(o: { socket?: string; instanceId?: string; env?: NodeJS.ProcessEnv }): FoundSocket {
  const env = o.env ?? process.env;
  if (o.socket) return { path: path.resolve(o.socket), source: 'explicit' };
  if (env.HERRSCHER_STATE_SOCKET) return { path: path.resolve(env.HERRSCHER_STATE_SOCKET), source: 'env' };
  return { path: defaultSocketPath(usableInstanceId(o.instanceId, env), env), source: 'default' };
}

/**
 * The instance id when it can name a socket that fits sun_path, else none: an id another writer
 * put in state.json (Go checks nothing) must not stop a start; the store warns about it.
 */
function usableInstanceId(id: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (!id) return undefined;
  try {
    return Buffer.byteLength(defaultSocketPath(id, env)) < SUN_PATH_BYTES ? id : undefined;
  } catch {
    return undefined; // not a file name (assertInstanceId): "a/b"
  }
}

/** How a found socket is described in an error: the path and the step that chose it. */
export function describeSource(found: FoundSocket): string {
  switch (found.source) {
    case 'explicit':
      return `${found.path} (given)`;
    case 'env':
      return `${found.path} (from $HERRSCHER_STATE_SOCKET)`;
    case 'record':
      return `${found.path} (recorded by the server of the state file)`;
    case 'default':
      return `${found.path} (the default; no server recorded itself for the state file)`;
  }
}

/**
 * A state file's path as the kernel resolves it, to tell whether two names are one file: the
 * file's real path, else (not written yet) its folder's real path and its name, else the
 * absolute path.
 */
export async function realStatePath(file: string): Promise<string> {
  const abs = path.resolve(file);
  try {
    return await fs.realpath(abs);
  } catch {
    try {
      return path.join(await fs.realpath(path.dirname(abs)), path.basename(abs));
    } catch {
      return abs;
    }
  }
}

/** Whether the server that answered `served` (initialize's statePath) serves the state file `wanted`. */
export async function servesState(served: string, wanted: string): Promise<boolean> {
  const [a, b] = await Promise.all([realStatePath(served), realStatePath(wanted)]);
  return a === b;
}
