// One writer per state file: flock(2) on the server lock in the state file's side folder
// (`<dir>/.herrscher-state/server.lock`, paths.ts serverLockPath), taken by the store at open.
// Herrscher's daemon lock `<dir>/.<base>.lock` (core/host/lock.go) is the daemon's own
// exclusivity lock: the store never creates nor takes it. It holds it only when a host that took
// it hands it over (`serve --lock-fd N`: adoptLock), until the store closes. The kernel drops a
// flock when its holder dies (kill -9 included): nothing to clean up by hand.
import fs from 'node:fs';
import type * as FsExt from 'fs-ext-extra-prebuilt';
import { createRequire } from 'node:module';
import { StoreError } from './store-error.js';
import { errnoOf } from '../common/errno.js';

type FlockSync = typeof FsExt.flockSync;
let binding: FlockSync | undefined;

/**
 * The flock(2) binding, loaded on first use rather than at import, so that a runtime it cannot
 * load in (an Electron whose ABI has no prebuilt binary, or an install that left the optional
 * dependency out) gets one line saying what to do instead of a crash at start. The store calls it
 * before it touches the disk.
 */
export function loadFlockBinding(): FlockSync {
  if (binding) return binding;
  try {
    binding = (createRequire(import.meta.url)('fs-ext-extra-prebuilt') as typeof FsExt).flockSync;
    return binding;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const missing = e?.code === 'MODULE_NOT_FOUND';
    const runtime = process.versions.electron
      ? `Electron ${process.versions.electron} (Node ${process.versions.node}, ABI ${process.versions.modules})`
      : `Node ${process.versions.node} (ABI ${process.versions.modules})`;
    const why = missing
      ? 'fs-ext-extra-prebuilt is not installed (an install with --omit=optional leaves it out; the server needs it, the client does not)'
      : `fs-ext-extra-prebuilt does not load in ${runtime}: ${String(e?.message ?? err).split('\n')[0]}`;
    throw new StoreError('binding', `cannot load the flock(2) binding the state lock needs: ${why}`, { code: e?.code }, e?.code);
  }
}

export interface HeldLock {
  release(): void;
}

/**
 * Takes the server lock of a state file (`<side>/server.lock`, its own open, so its own open file
 * description), or refuses with kind `locked`, naming the holder's pid as the file records it.
 * Held by the one server of the state file, also when it adopted a host's daemon lock: that lock
 * alone cannot tell two servers apart when both were handed the same descriptor (`serve --lock-fd
 * N` twice, from one host), since flock is per open file description and both share the host's.
 */
export function lockServer(serverLockPath: string, statePath: string, lockFd?: number): HeldLock {
  // O_NOFOLLOW: a link planted at the lock's name must not make us truncate its target.
  let fd: number;
  try {
    fd = fs.openSync(serverLockPath, fs.constants.O_CREAT | fs.constants.O_RDWR | fs.constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    if (errnoOf(err) !== 'ELOOP') throw err;
    throw new StoreError('io', `the lock file ${serverLockPath} is a symbolic link, which the store never follows: remove it`, { code: 'ELOOP' }, 'ELOOP');
  }
  try {
    loadFlockBinding()(fd, 'exnb');
  } catch (err) {
    const code = errnoOf(err);
    const holder = fs.readFileSync(fd, 'utf8').trim();
    fs.closeSync(fd);
    if (code === 'EAGAIN' || code === 'EWOULDBLOCK') {
      // With --lock-fd the holder is another server handed the same daemon lock (a host that spawned two).
      throw new StoreError('locked', `another ${lockFd !== undefined ? 'server' : 'process'} is already serving ${statePath}${holder ? ` (pid ${holder})` : ''}`
        + (lockFd !== undefined ? `: --lock-fd ${lockFd} refused (the lock is held through it, but a server already serves through that lock)` : ''),
      { ...(holder ? { pid: Number(holder) } : {}), ...(lockFd !== undefined ? { fd: lockFd } : {}) });
    }
    throw err;
  }
  fs.ftruncateSync(fd, 0);
  fs.writeSync(fd, String(process.pid), 0);
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      fs.closeSync(fd); // closing the last descriptor releases the flock
    },
  };
}

/**
 * Adopts the lock a host holds and hands over as descriptor `fd` (`serve --lock-fd N`). Checks
 * that `fd` is open on `lockPath` itself (same device and inode) and that the flock is held
 * through it: some process holds the lock (a fresh descriptor cannot take it), and an exclusive
 * non-blocking flock through `fd` succeeds, which for the holder's own open file description is
 * a no-op. The lock is never unlocked here: it is the host's; `release` only closes our
 * descriptor, which drops the lock only once the host's descriptors are gone too.
 */
export function adoptLock(fd: number, lockPath: string, statePath: string): HeldLock {
  const refuse = (why: string): StoreError => new StoreError('locked', `--lock-fd ${fd} refused: ${why}`, { fd });
  let st: fs.Stats;
  try {
    st = fs.fstatSync(fd);
  } catch (err) {
    throw refuse(`descriptor ${fd} is not open (${errnoOf(err) ?? (err as Error).message})`);
  }
  let want: fs.Stats;
  try {
    want = fs.lstatSync(lockPath);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT') throw refuse(`the lock file ${lockPath} of ${statePath} does not exist, so descriptor ${fd} cannot be open on it`);
    throw refuse(`the lock file ${lockPath} of ${statePath} cannot be read (${code ?? (err as Error).message})`);
  }
  if (!want.isFile() || st.dev !== want.dev || st.ino !== want.ino) {
    throw refuse(`descriptor ${fd} is not open on the lock file ${lockPath} of ${statePath} (not the same device and inode)`);
  }
  // Is the lock held at all? A fresh open file description must not be able to take it.
  const probe = fs.openSync(lockPath, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  let free = false;
  try {
    loadFlockBinding()(probe, 'exnb');
    free = true;
  } catch (err) {
    const code = errnoOf(err);
    if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') throw err;
  } finally {
    fs.closeSync(probe); // closing the probe drops the lock it took, if it took one
  }
  if (free) throw refuse(`the lock file ${lockPath} is not locked: the host must hold the flock on it before it hands it over`);
  try {
    loadFlockBinding()(fd, 'exnb');
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'EAGAIN' || code === 'EWOULDBLOCK') {
      throw refuse(`the lock on ${lockPath} is held, but not through descriptor ${fd} (another open of the file, or another process, holds it)`);
    }
    throw err;
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      fs.closeSync(fd);
    },
  };
}

/**
 * Takes an exclusive flock through `fd` without waiting; false when another open file holds it.
 * For a host written in TypeScript that holds the lock before it spawns the server (and tests).
 */
export function tryFlock(fd: number): boolean {
  try {
    loadFlockBinding()(fd, 'exnb');
    return true;
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return false;
    throw err;
  }
}
