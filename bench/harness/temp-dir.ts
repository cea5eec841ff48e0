// A temp dir per bench on the machine's usual temp file system (where a state dir would live),
// removed when the bench exits, even after a failure.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A bench's temp dir and, inside it, `raw/` for its in-process ceilings. */
export function benchDirs(bench: string): { dir: string; rawDir: string } {
  const dir = tempDir(`hs-bench-${bench}-`);
  const rawDir = path.join(dir, 'raw');
  mkdirSync(rawDir);
  return { dir, rawDir };
}
