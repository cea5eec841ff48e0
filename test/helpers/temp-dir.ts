// A fresh temp state dir per test, removed when the test file ends (as sonic-boom's helper).
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { atFileEnd } from './file-end.js';

export function tempDir(prefix = 'hs-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  atFileEnd(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Whether another user may pass every folder from / down to `dir` (the execute bit for others). */
function othersCanPass(dir: string): boolean {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return false;
    if (d === path.dirname(d)) return true;
  }
}

/**
 * A temp dir (mode 0755) another user can reach, for the tests that run a process as `nobody`:
 * under the temp dir when every folder above it lets others pass, else under /tmp or /var/tmp,
 * so a private TMPDIR (0700, as systemd's PrivateTmp or a per-user temp dir) does not fail them.
 */
export function tempDirOthersCanReach(prefix = 'hs-'): string {
  for (const base of [os.tmpdir(), '/tmp', '/var/tmp']) {
    try {
      accessSync(base, constants.W_OK | constants.X_OK);
      if (!othersCanPass(base)) continue;
    } catch {
      continue;
    }
    const dir = mkdtempSync(path.join(base, prefix));
    atFileEnd(() => rmSync(dir, { recursive: true, force: true }));
    chmodSync(dir, 0o755);
    return dir;
  }
  throw new Error(`no temp folder another user can reach: ${os.tmpdir()}, /tmp and /var/tmp are each missing, not writable, or closed to others on the way down`);
}

export const statePathIn = (dir: string): string => path.join(dir, 'state.json');
