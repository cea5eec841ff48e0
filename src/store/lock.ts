// One writer per state file: flock(2) on `<dir>/.<base>.lock`, the very lock Herrscher's Go daemon
// takes (core/host/lock.go), so the Go daemon, a Go CLI and this server exclude one another. The
// kernel drops the lock when its holder dies (kill -9 included): nothing to clean up by hand.
import { flockSync } from 'fs-ext';
import fs from 'node:fs';
import { StoreError } from './store-error.js';

export interface HeldLock {
  release(): void;
}

/** Takes the lock or refuses, naming the holder's pid as the file records it. */
export function lockStateFile(lockPath: string, statePath: string): HeldLock {
  // O_NOFOLLOW: a link planted at the lock's name must not make us truncate its target.
  let fd: number;
  try {
    fd = fs.openSync(lockPath, fs.constants.O_CREAT | fs.constants.O_RDWR | fs.constants.O_NOFOLLOW, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOOP') throw err;
    throw new StoreError('io', `the lock file ${lockPath} is a symbolic link, which the store never follows: remove it`, { code: 'ELOOP' }, 'ELOOP');
  }
  try {
    flockSync(fd, 'exnb');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const holder = fs.readFileSync(fd, 'utf8').trim();
    fs.closeSync(fd);
    if (code === 'EAGAIN' || code === 'EWOULDBLOCK') {
      throw new StoreError(
        'locked',
        `another process is already serving ${statePath}${holder ? ` (pid ${holder})` : ''}`,
        holder ? { pid: Number(holder) } : undefined,
      );
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
