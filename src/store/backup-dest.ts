// Where a backup may be written: checked before anything is fixed, so a refused DEST costs no
// write hold. Restore uses the same path resolution for its own target.
import fs from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import { ioError, StoreError } from './store-error.js';

/**
 * Refuses a DEST that is relative, exists and is not an empty folder, or lies inside the state
 * dir (a backup there would be copied into the next backup, and served as part of the state).
 */
export async function checkBackupDest(dest: string, stateDir: string): Promise<void> {
  const refuse = (why: string): StoreError => new StoreError('invalid-input', `backup destination ${JSON.stringify(dest)} ${why}`);
  if (!path.isAbsolute(dest)) throw refuse('must be an absolute path');
  const real = await realpathOfNearest(path.resolve(dest));
  const dir = await fs.realpath(stateDir);
  if (real === dir || real.startsWith(`${dir}${path.sep}`)) throw refuse(`is inside the state dir ${dir}: write it elsewhere`);
  let names: string[];
  try {
    names = await fs.readdir(dest);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return;
    if (isErrno(err, 'ENOTDIR')) throw refuse('exists and is not a folder');
    throw ioError('list', dest, err);
  }
  if (names.length > 0) throw refuse('exists and is not empty: give a new folder (a backup never overwrites one)');
}

/** The real path of `p`: of its nearest existing ancestor, with the rest of `p` appended. */
export async function realpathOfNearest(p: string): Promise<string> {
  const rest: string[] = [];
  for (let at = p; ; at = path.dirname(at)) {
    try {
      return path.join(await fs.realpath(at), ...rest.reverse());
    } catch (err) {
      if (!isErrno(err, 'ENOENT') || at === path.dirname(at)) throw err;
      rest.push(path.basename(at));
    }
  }
}
