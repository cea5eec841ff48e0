// Temp files a crash can leave: Go's fixed `<file>.tmp` and write-file-atomic's `<file>.<uint32>`.
// Removed at startup, under the lock, so nothing that is still being written can be hit.
import path from 'node:path';
import type { Io } from './io.js';

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

async function sweep(io: Io, dir: string, isTemp: (name: string) => boolean): Promise<void> {
  let names: string[];
  try {
    names = await io.readdir(dir);
  } catch {
    return; // a missing folder has nothing to sweep
  }
  await Promise.all(names.filter(isTemp).map((n) => io.unlink(path.join(dir, n)).catch(() => undefined)));
}

export async function sweepTempFiles(io: Io, dir: string, stateBase: string): Promise<void> {
  const stateTemp = new RegExp(`^${escape(stateBase)}\\.(tmp|\\d+)$`);
  await sweep(io, dir, (n) => stateTemp.test(n));
  await sweep(io, path.join(dir, 'transcripts'), (n) => /\.jsonl\.(tmp|compact|\d+)$/.test(n));
  await sweep(io, path.join(dir, '.herrscher-state', 'transcripts'), (n) => /\.json\.\d+$/.test(n));
}
