// Temp files a crash can leave: Go's fixed `<file>.tmp`, write-file-atomic's `<file>.<uint32>`, and
// `<file>.<uint32>.<uint32>` (the store replaces a link at `file` through a fresh name, io.ts).
// Removed at startup, under the lock, so nothing that is still being written can be hit. A temp
// file that cannot be removed (or a folder that cannot be listed) is logged at error, not fatal.
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import { ioError } from './store-error.js';
import type { StoreLog } from './store-log.js';

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

async function sweep(io: Io, root: string, rel: string, isTemp: (name: string) => boolean, log: StoreLog): Promise<void> {
  const dir = path.join(root, rel);
  let names: string[];
  try {
    names = await io.readdir(dir);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return; // a missing folder has nothing to sweep
    // A leftover temp file is harmless (never read as data): not sweeping is no reason to refuse
    // to start, but it is not silent either. The next start tries again.
    log.error(`temp files in ${rel || 'the state dir'} not swept`, ioError('list', rel || '.', err));
    return;
  }
  for (const n of names.filter(isTemp)) {
    try {
      await io.unlink(path.join(dir, n));
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) log.error(`temp file ${path.join(rel, n)} not swept`, ioError('remove', path.join(rel, n), err));
    }
  }
}

export async function sweepTempFiles(
  io: Io, dir: string, stateBase: string, log: StoreLog, side = '.herrscher-state',
  /** What the open just made, so holds no temp file: the state dir itself, the side folder. */
  fresh: { dir?: boolean; side?: boolean } = {},
): Promise<void> {
  const stateTemp = new RegExp(`^${escape(stateBase)}\\.(tmp|\\d+(\\.\\d+)?)$`);
  if (!fresh.dir) {
    await sweep(io, dir, '', (n) => stateTemp.test(n), log);
    await sweep(io, dir, 'transcripts', (n) => /\.jsonl\.(tmp|compact|\d+(\.\d+)?)$/.test(n), log);
  }
  if (fresh.side) return;
  await sweep(io, dir, `${side}/transcripts`, (n) => /\.(json|summary)\.\d+(\.\d+)?$/.test(n), log);
  // The side folder's own whole-file replaces: the seq high-water marks and the adoption marker.
  await sweep(io, dir, side, (n) => /^(high-water\.json|adopted-shared-side-files)\.\d+(\.\d+)?$/.test(n), log);
}
