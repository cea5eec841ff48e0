// Whether a server holds a state file's server lock, asked without taking it for longer than the
// question and without writing anything (verify must not; restore asks before it refuses).
import { constants as C } from 'node:fs';
import fs from 'node:fs';
import { errnoOf } from '../common/errno.js';
import { loadFlockBinding } from './lock.js';

/** The pid the lock file records when a process holds its flock; undefined when none does (or there is no file). */
export function lockHolder(lockPath: string): { pid: string } | undefined {
  let fd: number;
  try {
    fd = fs.openSync(lockPath, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
  try {
    loadFlockBinding()(fd, 'exnb');
    return undefined; // taken at once: nobody holds it (closing the descriptor drops it again)
  } catch (err) {
    const code = errnoOf(err);
    if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') throw err;
    return { pid: fs.readFileSync(fd, 'utf8').trim() };
  } finally {
    fs.closeSync(fd);
  }
}
