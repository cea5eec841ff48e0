// A real full disk for tests: a small tmpfs mounted on a fresh temp dir (root only), and a filler
// that takes every byte of it.
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from './temp-dir.js';

/** Mounts a tmpfs of `size` at a fresh dir, or says why it cannot. */
export function mountTmpfs(size: string): { dir: string } | { skip: string } {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return { skip: 'needs root to mount a tmpfs' };
  const dir = tempDir('hs-full-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    return { skip: `mount -t tmpfs failed: ${(err as Error).message.split('\n')[0]}` };
  }
  return { dir };
}

export function unmount(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'pipe' });
  } catch {
    execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
  }
}

/** Writes a filler file until the file system refuses, down to single bytes, so no block is left; returns its path. */
export function fill(dir: string): string {
  const file = path.join(dir, 'filler');
  const fd = openSync(file, 'w');
  try {
    for (const chunk of [4096, 512, 1]) {
      const buf = Buffer.alloc(chunk, 0x66);
      for (;;) {
        try {
          if (writeSync(fd, buf) < chunk) break;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw err;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return file;
}
