// Temp files a crash can leave: Go's fixed `<file>.tmp` and write-file-atomic's `<file>.<uint32>`.
// Removed at startup, under the lock, so nothing that is still being written can be hit.
import path from 'node:path';
import { isErrno } from './errno.js';
import type { Io } from './io.js';
import { ioError } from './store-error.js';

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

async function sweep(io: Io, root: string, rel: string, isTemp: (name: string) => boolean): Promise<void> {
  const dir = path.join(root, rel);
  let names: string[];
  try {
    names = await io.readdir(dir);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return; // a missing folder has nothing to sweep
    throw ioError('list', rel || '.', err);
  }
  for (const n of names.filter(isTemp)) {
    try {
      await io.unlink(path.join(dir, n));
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw ioError('remove the temp file', path.join(rel, n), err);
    }
  }
}

export async function sweepTempFiles(io: Io, dir: string, stateBase: string): Promise<void> {
  const stateTemp = new RegExp(`^${escape(stateBase)}\\.(tmp|\\d+)$`);
  await sweep(io, dir, '', (n) => stateTemp.test(n));
  await sweep(io, dir, 'transcripts', (n) => /\.jsonl\.(tmp|compact|\d+)$/.test(n));
  await sweep(io, dir, '.herrscher-state/transcripts', (n) => /\.json\.\d+$/.test(n));
}
