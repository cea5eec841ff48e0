// The one rule that finds a server, used by `serve` (where to listen), the CLI commands and the
// client library's connect() (where to connect):
//   an explicit socket > $HERRSCHER_STATE_SOCKET > the socket recorded by the live server of the
//   state file named (--state, else the default state path) > the per-user shared server's socket
//   when its file exists > the per-user default folder's herrscher-state[-<instanceID>].sock.
// docs/adoption.md explains each step.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readLiveServerRecord } from './server-record.js';
import { errnoOf } from '../common/errno.js';
import { defaultSocketPath, sharedSocketPath, SUN_PATH_BYTES } from './socket.js';

/** Where the state lives when --state is not given, as Herrscher decides it (core/host/serve.go). */
export function defaultStatePath(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.HERRSCHER_STATE_DIR;
  return dir ? path.join(dir, 'state.json') : path.join(os.homedir(), '.config', 'herrscher', 'state.json');
}

export type SocketSource = 'explicit' | 'env' | 'record' | 'shared' | 'default';

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
  const shared = sharedSocketPath(env);
  if (await exists(shared)) return { path: shared, source: 'shared' };
  return { path: defaultSocketPath(undefined, env), source: 'default' };
}

/**
 * Whether something is at `file` (not followed: a dangling link is something too, and the
 * socket's checks then say what it is). A folder that cannot be read counts as nothing there.
 */
async function exists(file: string): Promise<boolean> {
  try {
    await fs.lstat(file);
    return true;
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') return false;
    throw err;
  }
}

/**
 * The state file a client names in `initialize`: the one asked for, else, on the shared server
 * (which serves every state), the client's default state, as the record step read it; else none
 * (a dedicated server serves what it serves). Absolute: the server resolves against its own cwd.
 */
export function stateToName(found: FoundSocket, state: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (state !== undefined) return path.resolve(state);
  return found.source === 'shared' ? path.resolve(defaultStatePath(env)) : undefined;
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
    case 'shared':
      return `${found.path} (the per-user shared server; no server recorded itself for the state file)`;
    case 'default':
      return `${found.path} (the default; no server recorded itself for the state file and no shared server runs)`;
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
