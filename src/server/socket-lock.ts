// The shared server's lifetime lock: an exclusive flock on a file beside its socket, taken before
// it looks at the socket path at all and held until its stop has finished. Two servers started at
// once on a stale socket could otherwise both find it stale, both remove it and both publish
// theirs, the first one's replaced: left running unreachable, holding its states' locks. With the
// lock, the second start is refused at once; and a server that stops releases it only after its
// states are dropped and its socket removed, so its successor never meets the states it still held.
// The file is never removed: removing it would let two processes each lock a file of that name.
import fs from 'node:fs';
import path from 'node:path';
import { tryFlock } from '../store/lock.js';

/** The lock file of the server listening on `socketPath`: its name with `.lock` for `.sock`. */
export function socketLockPath(socketPath: string): string {
  const abs = path.resolve(socketPath);
  return `${abs.endsWith('.sock') ? abs.slice(0, -'.sock'.length) : abs}.lock`;
}

export interface SocketLock {
  /** Releases the lock (closes its descriptor); idempotent. */
  release(): void;
}

/** Takes the lock of `socketPath` without waiting; undefined when another process holds it. */
export function lockSocket(socketPath: string): SocketLock | undefined {
  const fd = fs.openSync(socketLockPath(socketPath), fs.constants.O_CREAT | fs.constants.O_RDWR | fs.constants.O_NOFOLLOW, 0o600);
  let held: boolean;
  try {
    held = tryFlock(fd);
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
  if (!held) {
    fs.closeSync(fd);
    return undefined;
  }
  let open = true;
  return {
    release() {
      if (!open) return;
      open = false;
      fs.closeSync(fd);
    },
  };
}
