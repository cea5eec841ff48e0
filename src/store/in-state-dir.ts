// The guard every file write of a session's files passes: the state dir is still the one opened.
import type { StateDirWatch } from './state-gone.js';

/** `write()`, unless the state dir is gone (state-gone.ts): then the gone error, and nothing is touched. */
export function inStateDir<T>(dirWatch: StateDirWatch, what: string, write: () => Promise<T>): Promise<T> {
  try {
    dirWatch.assertHere(what);
  } catch (err) {
    return Promise.reject(err);
  }
  return write();
}
