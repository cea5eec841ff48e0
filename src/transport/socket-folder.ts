// The per-user folder default sockets live in, and the ownership checks a client makes before it
// sends anything to a socket (a squatted socket must never receive transcript text).
// As tmux does: the folder is ours, a real folder (no symlink), and no one else may write to it,
// so no one else can put a socket of theirs at the path we connect to.
import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SocketError } from './socket-error.js';
import { errnoOf } from '../common/errno.js';


/** The current user's id; undefined where there are no uids (Windows: no checks to make). */
const myUid = (): number | undefined => process.getuid?.();

/**
 * The per-user default socket folder: `$XDG_RUNTIME_DIR/herrscher-state/` when XDG_RUNTIME_DIR is
 * set (systemd makes it per user, 0700), else `$TMPDIR/herrscher-state-<uid>/`.
 */
export function defaultSocketFolder(env: NodeJS.ProcessEnv = process.env): string {
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime) return path.join(path.resolve(runtime), 'herrscher-state');
  const tmp = env.TMPDIR ? path.resolve(env.TMPDIR) : os.tmpdir();
  return path.join(tmp, `herrscher-state-${myUid() ?? 'user'}`);
}

/**
 * Makes the default socket folder (0700) unless it exists, then checks it as a client would: a
 * server never listens in a folder a client would refuse.
 */
export async function ensureSocketFolder(dir: string): Promise<void> {
  try {
    await fs.mkdir(dir, { mode: 0o700 });
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') {
      throw new SocketError(`cannot create the socket folder ${dir}: its parent does not exist`, 'ENOENT');
    }
    if (errnoOf(err) !== 'EEXIST') throw new SocketError(`cannot create the socket folder ${dir}: ${(err as Error).message}`, errnoOf(err));
  }
  await assertFolderPrivate(dir);
}

/**
 * Refuses a socket folder that is a symlink, not a folder, not ours, or that others may write to
 * (group- or world-writable, sticky or not). `exact`: the default folder must also be no wider
 * than 0700 (nobody else may even list it), as tmux requires of its own.
 */
export async function assertFolderPrivate(dir: string, options: { exact?: boolean } = { exact: true }): Promise<void> {
  let st;
  try {
    st = await fs.lstat(dir);
  } catch (err) {
    const code = errnoOf(err);
    throw new SocketError(code === 'ENOENT' ? `socket folder ${dir} does not exist` : `cannot check socket folder ${dir}: ${(err as Error).message}`, code);
  }
  const unsafe = (why: string): SocketError =>
    new SocketError(`refusing socket folder ${dir}: ${why}; remove it (or fix it) and start the server again`, 'EUNSAFE');
  if (st.isSymbolicLink()) throw unsafe('it is a symbolic link');
  if (!st.isDirectory()) throw unsafe('it is not a folder');
  const uid = myUid();
  if (uid !== undefined && st.uid !== uid) throw unsafe(`it belongs to uid ${st.uid}, not to us (uid ${uid})`);
  const mode = st.mode & 0o777;
  const wide = options.exact === false ? mode & 0o022 : mode & 0o077;
  if (uid !== undefined && wide !== 0) {
    throw unsafe(`its mode is 0${mode.toString(8)}, ${options.exact === false ? 'writable by others' : 'wider than 0700'}`);
  }
}

/**
 * Checks, before a client sends anything, that `socketPath` is a socket of ours in a folder of
 * ours that no one else may write to: then no one else can have put it there or swap it later.
 * A missing socket passes (connecting then fails with "no server"). Symlinks are resolved first:
 * the checks apply to the socket the kernel would connect to.
 */
export async function assertSocketTrusted(socketPath: string): Promise<void> {
  const uid = myUid();
  if (uid === undefined) return;
  let real: string;
  try {
    real = await fs.realpath(socketPath);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return;
    throw new SocketError(`cannot check socket ${socketPath}: ${(err as Error).message}`, errnoOf(err));
  }
  const st = await fs.stat(real);
  const refuse = (why: string): SocketError =>
    new SocketError(`refusing socket ${socketPath}: ${why}; another user may be impersonating the server, nothing was sent`, 'EUNSAFE');
  if (!st.isSocket()) {
    // A wrong path, not an attack: say what is there instead of suspecting another user.
    const what = st.isFile() ? 'a regular file' : st.isDirectory() ? 'a folder' : 'not a socket';
    throw new SocketError(
      `${socketPath} is ${what}, not a server's socket: no server listens there (is the socket path right? \`serve\` makes the socket itself); nothing was sent`,
      'EEXIST',
    );
  }
  if (st.uid !== uid) throw refuse(`it belongs to uid ${st.uid}, not to us (uid ${uid})`);
  const dir = path.dirname(real);
  const why = folderRefusal(await fs.stat(dir), dir);
  if (why !== undefined) throw refuse(why);
}

/**
 * Why a client refuses a socket in the folder `dir` (its stat), or undefined: the folder must be
 * ours and no one else may write to it, sticky or not. In a sticky /tmp another user may put a
 * socket at the name first, and a client cannot tell theirs from ours. `serve` applies the same
 * rule to the folder it is asked to listen in, so it never serves a socket its clients refuse.
 */
export function folderRefusal(d: Stats, dir: string): string | undefined {
  const uid = myUid();
  if (uid === undefined) return undefined;
  if (d.uid !== uid) return `its folder ${dir} belongs to uid ${d.uid}, not to us (uid ${uid})`;
  if ((d.mode & 0o022) !== 0) return `its folder ${dir} is writable by others (mode 0${(d.mode & 0o7777).toString(8)})`;
  return undefined;
}
