// The unix socket bridges, the operator CLI and editor extensions reach the server on:
// created 0600 with no moment where it is wider, stale files from a crash replaced,
// live servers never displaced.
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { SocketError } from './socket-error.js';
import { MAX_CONNECTIONS } from './limits.js';
import { defaultSocketFolder, folderRefusal } from './socket-folder.js';
import { errnoOf } from '../common/errno.js';
import { holdV8FlagDefaults } from '../common/v8-flag-hold.js';

export { SocketError, SocketErrorCodes } from './socket-error.js';
export type { SocketErrorCode } from './socket-error.js';

/** sizeof(sockaddr_un.sun_path), NUL included: 108 on Linux, 104 on macOS and the BSDs. */
export const SUN_PATH_BYTES = process.platform === 'linux' ? 108 : 104;

/** How long the stale-socket probe waits: a live server accepts at once, a full backlog may not. */
const PROBE_TIMEOUT_MS = 1000;

export interface UnixSocketListener {
  /** Stops accepting and removes the socket file; open connections stay with their owners. */
  close(): Promise<void>;
  /** The absolute path clients connect to. */
  path: string;
}

export interface ListenOptions {
  /** Errors of the listening socket after it is up (EMFILE on accept…); it keeps listening. */
  onError?: (error: Error) => void;
  /** Connections open at once; one more is closed as it arrives (default MAX_CONNECTIONS). */
  maxConnections?: number;
  /** Told when a connection was closed on arrival because MAX_CONNECTIONS are open. */
  onDrop?: () => void;
}


/** Refuses an instance id that cannot be part of a socket file name. */
export function assertInstanceId(instanceId: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(instanceId)) {
    throw new SocketError(`instance id must be letters, digits, "_", "-" and "." only. Got ${JSON.stringify(instanceId)}`);
  }
}

/**
 * The socket path a server for `instanceId` listens on by default: `herrscher-state[-<id>].sock`
 * in the per-user default folder (socket-folder.ts), so two users never share one path.
 */
export function defaultSocketPath(instanceId?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (instanceId) assertInstanceId(instanceId);
  return path.join(defaultSocketFolder(env), instanceId ? `herrscher-state-${instanceId}.sock` : 'herrscher-state.sock');
}

/**
 * The file name of the per-user shared server's socket (`serve --shared`), in the default socket
 * folder. Declared here only: `npm run schema` writes it into the Go and Python clients.
 */
export const SHARED_SOCKET_NAME = 'herrscher-state-shared.sock';

/** Where the per-user shared server listens: SHARED_SOCKET_NAME in the default socket folder. */
export function sharedSocketPath(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(defaultSocketFolder(env), SHARED_SOCKET_NAME);
}

/**
 * Refuses a path the kernel cannot bind: libuv may otherwise fail with a bare EINVAL or, in
 * older versions, silently truncate it and bind a different file.
 */
export function assertSocketPathFits(socketPath: string): void {
  const bytes = Buffer.byteLength(socketPath);
  if (bytes > SUN_PATH_BYTES - 1) {
    throw new SocketError(
      `socket path is ${bytes} bytes long; a unix socket path must be at most ${SUN_PATH_BYTES - 1} bytes ` +
        `(sun_path is ${SUN_PATH_BYTES} bytes on ${process.platform}, NUL included): ${socketPath}`,
      'ENAMETOOLONG',
    );
  }
}

/** The folder a socket is first bound in, inside the socket's own folder (mkdtemp adds six characters). */
const STAGING_PREFIX = '.sock-';

/**
 * Listens on a unix socket at `socketPath`, mode 0600 from the first moment, replacing a stale
 * socket file a crashed server left and refusing one a live server answers on.
 */
export async function listenUnixSocket(
  socketPath: string,
  onConnection: (socket: net.Socket) => void,
  options: ListenOptions = {},
): Promise<UnixSocketListener> {
  const target = path.resolve(socketPath);
  const dir = path.dirname(target);
  assertSocketPathFits(target);
  // The socket is bound inside a fresh folder first (below); that path must fit too.
  const staging = Buffer.byteLength(path.join(dir, `${STAGING_PREFIX}XXXXXX`, 's'));
  if (staging > SUN_PATH_BYTES - 1) {
    throw new SocketError(
      `socket path ${target} is too long to create safely: it is first bound as ${path.join(dir, `${STAGING_PREFIX}XXXXXX`, 's')}, ` +
        `${staging} bytes, and a unix socket path must be at most ${SUN_PATH_BYTES - 1} bytes; use a shorter folder`,
      'ENAMETOOLONG',
    );
  }
  await assertFolderSafe(dir);
  await removeStaleSocket(target);

  // Why not umask: process.umask is process-wide, and the store writes files from libuv's
  // thread pool concurrently, so narrowing it around listen() would change their modes too.
  // Instead the socket is born inside a folder mkdtemp makes 0700, where no other user can reach
  // it, narrowed to 0600 there, then hard-linked into place: link() never replaces an existing
  // file, so a server that started meanwhile is not displaced either.
  // The prefix is joined as a string: path.join(dir, '.') would be dir itself, and mkdtemp would
  // make the folder beside dir, in a parent this server was never asked to write.
  const folder = await fs.mkdtemp(`${dir}${path.sep}${STAGING_PREFIX}`);
  const bound = path.join(folder, 's');
  // allowHalfOpen: a client may shut its write side after its last request (a shell pipe, a Python
  // script) and still read the replies; the server ends the socket once it has answered.
  const server = net.createServer({ allowHalfOpen: true }, onConnection);
  // The per-connection bounds times this is the total a crowd of clients can make us hold.
  server.maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
  server.on('drop', () => options.onDrop?.());
  let identity: { dev: number; ino: number };
  try {
    await listen(server, bound);
    await fs.chmod(bound, 0o600);
    try {
      await fs.link(bound, target);
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'EEXIST') throw inUse(target);
      // A file system without hard links: rename still publishes an 0600 socket, it just could
      // replace a socket another server published in the last few milliseconds.
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
      await fs.rename(bound, target);
    }
    const st = await fs.lstat(target);
    identity = { dev: st.dev, ino: st.ino };
  } catch (err) {
    server.close();
    throw err;
  } finally {
    await removeStagingFolder(folder, bound);
  }
  server.on('error', (err) => options.onError?.(err));

  let closing: Promise<void> | undefined;
  return {
    path: target,
    close: () =>
      (closing ??= (async () => {
        server.close();
        // Only our own file: after a crash and restart another server may own the path.
        const st = await fs.lstat(target).catch((err: unknown) => {
          if (errnoOf(err) === 'ENOENT') return undefined; // already gone: nothing to remove
          throw err;
        });
        if (st && st.dev === identity.dev && st.ino === identity.ino) await fs.rm(target, { force: true });
      })()),
  };
}

/**
 * Removes the staging folder a socket was bound in: its one file, then the folder. Not fs.rm:
 * that loads node's rimraf module, at every start, after serve's heap flags made V8 refuse node's
 * code cache for it (common/v8-flag-hold.ts). Anything else in the folder (it is ours, mode 0700)
 * is left to fs.rm.
 */
async function removeStagingFolder(folder: string, bound: string): Promise<void> {
  try {
    await fs.unlink(bound).catch((err: unknown) => {
      if (errnoOf(err) !== 'ENOENT') throw err; // renamed into place, or never bound
    });
    await fs.rmdir(folder);
  } catch {
    await fs.rm(folder, { recursive: true, force: true });
  }
}

/**
 * Connects to a server's unix socket, failing after `timeoutMs` with a message that says whether
 * no file, no server, or no permission was the cause.
 */
export function connectUnixSocket(socketPath: string, options: { timeoutMs?: number } = {}): Promise<net.Socket> {
  const timeoutMs = options.timeoutMs ?? 5000;
  assertSocketPathFits(socketPath);
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(socketPath);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new SocketError(`connecting to socket ${socketPath} timed out after ${timeoutMs} ms`, 'ETIMEDOUT'));
    }, timeoutMs);
    const onError = (err: Error): void => {
      clearTimeout(timer);
      reject(describeConnectError(socketPath, err));
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeListener('error', onError);
      resolve(socket);
    });
  });
}

function describeConnectError(socketPath: string, err: Error): SocketError {
  const code = errnoOf(err);
  switch (code) {
    case 'ENOENT':
      return new SocketError(`no server at socket ${socketPath}: the file does not exist; start one with \`herrscher-state serve --socket ${socketPath}\``, code);
    case 'ECONNREFUSED':
      return new SocketError(`no server is listening on socket ${socketPath} (a file left by a crash?); start one with \`herrscher-state serve --socket ${socketPath}\``, code);
    case 'EACCES':
      return new SocketError(`permission denied on socket ${socketPath}`, code);
    default:
      return new SocketError(`cannot connect to socket ${socketPath}: ${err.message}`, code);
  }
}

function listen(server: net.Server, at: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    // A process's first listen loads node's `cluster` and `child_process` modules (net's
    // listenInCluster), within this call. With V8 flags set at run time (serve's heap settings)
    // node would compile them without its code cache: ~5 ms of CPU more per server
    // (common/v8-flag-hold.ts), so the flags are at V8's defaults for the call.
    const release = holdV8FlagDefaults();
    try {
      server.listen(at, () => {
        server.removeListener('error', reject);
        resolve();
      });
    } finally {
      release();
    }
  });
}

function inUse(socketPath: string): SocketError {
  return new SocketError(`socket ${socketPath} is in use by another server`, 'EADDRINUSE');
}

/**
 * Refuses a socket folder that is missing (said before `serve` creates anything), or one in which
 * a client would refuse the socket (folderRefusal: not ours, or others may write to it, a sticky
 * /tmp included): a server whose socket every client refuses serves no one.
 */
export async function assertFolderSafe(dir: string): Promise<void> {
  const st = await fs.stat(dir).catch((err: unknown) => {
    if (errnoOf(err) !== 'ENOENT') throw err;
    throw new SocketError(`its folder ${dir} does not exist`, 'ENOENT');
  });
  const why = folderRefusal(st, dir);
  if (why !== undefined) {
    throw new SocketError(
      `${why}: clients connect only to a socket in a folder of their user that no one else may write to (another user could have put a socket there), so they would refuse this one`,
      'EUNSAFE',
    );
  }
}

/** Unlinks a socket file nobody answers on (a crashed server's); refuses a live one or a non-socket. */
async function removeStaleSocket(target: string): Promise<void> {
  const st = await fs.lstat(target).catch((err: unknown) => {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  });
  if (st === undefined) return;
  if (!st.isSocket()) throw new SocketError(`${target} exists and is not a socket; refusing to replace it`, 'EEXIST');
  const state = await probe(target);
  if (state === 'live') throw inUse(target);
  if (state === 'stale') await fs.rm(target, { force: true });
}

function probe(target: string): Promise<'live' | 'stale' | 'gone'> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(target);
    const done = (): void => {
      clearTimeout(timer);
      socket.destroy();
    };
    // No answer in time (a full backlog) is treated as alive: never unlink what might be live.
    const timer = setTimeout(() => {
      done();
      resolve('live');
    }, PROBE_TIMEOUT_MS);
    socket.once('connect', () => {
      done();
      resolve('live');
    });
    socket.once('error', (err) => {
      done();
      const code = errnoOf(err);
      if (code === 'ECONNREFUSED') resolve('stale');
      else if (code === 'ENOENT') resolve('gone');
      else reject(new SocketError(`cannot tell whether socket ${target} is in use: ${code ?? err.message}`, code));
    });
  });
}
