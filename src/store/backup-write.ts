// Step 2 of a backup (backup.ts), while writes flow again: the bytes fixed in step 1 are copied
// into DEST, synced file by file and folder by folder, the manifest written last (a folder
// without it is an unfinished backup), the staging folder removed.
import { constants as C } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import type { FixedBackup } from './backup-fix.js';
import type { ManifestFile } from './backup-manifest.js';
import { encodeManifest, MANIFEST_NAME, UNFINISHED_NAME } from './backup-manifest.js';
import { FILES_AT_ONCE, inParallel } from './backup-parallel.js';
import { copyPrefix, syncFolder, writeNewFile } from './file-copy.js';
import { ioError } from './store-error.js';

/** What a backup wrote (backupStore and backupOffline add what it is at). */
interface Written {
  files: number;
  bytes: number;
}

/**
 * Step 2: copies what was fixed into `dest` (which checkBackupDest allowed), syncs every file and
 * folder, then writes the manifest; removes the staging folder whatever happens. A failure
 * removes what it wrote into `dest`.
 */
export async function writeBackup(fixed: FixedBackup, dest: string): Promise<Written> {
  const made: string[] = [];
  let createdDest = false;
  try {
    try {
      await fs.mkdir(dest, { mode: 0o700 });
      createdDest = true;
    } catch (err) {
      if (!isErrno(err, 'EEXIST')) throw err;
    }
    // Before any file: a writer stopped from here on leaves the folder marked as unfinished.
    const tmp = path.join(dest, UNFINISHED_NAME);
    made.push(UNFINISHED_NAME);
    await (await fs.open(tmp, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, 0o600)).close();
    await syncFolder(dest);
    const folders = new Set<string>();
    for (const rel of [...fixed.files.map((f) => f.rel), ...fixed.written.map((w) => w.rel)]) {
      const folder = path.dirname(rel);
      if (folder !== '.' && !folders.has(folder)) {
        await fs.mkdir(path.join(dest, folder), { mode: 0o700 });
        made.push(folder);
        folders.add(folder);
      }
      made.push(rel);
    }
    const copied = await inParallel(fixed.files, FILES_AT_ONCE, (f) => copyPrefix(f.held, path.join(dest, f.rel), f.size));
    const files: Record<string, ManifestFile> = Object.fromEntries(fixed.files.map((f, i) => [f.rel, copied[i] as ManifestFile]));
    for (const w of fixed.written) files[w.rel] = await writeNewFile(path.join(dest, w.rel), w.text);
    const bytes = Object.values(files).reduce((n, f) => n + f.size, 0);
    for (const folder of folders) await syncFolder(path.join(dest, folder));
    const { source } = fixed;
    const manifest = encodeManifest({
      offline: fixed.offline, revision: fixed.offline ? null : source.revision, epoch: fixed.offline ? null : source.epoch,
      createdAt: fixed.createdAt, source: source.statePath,
      numbering: fixed.numbering, seqMarks: Object.fromEntries(source.marks), files,
    });
    const fh = await fs.open(tmp, C.O_WRONLY | C.O_TRUNC | C.O_NOFOLLOW);
    try {
      await fh.writeFile(manifest);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, path.join(dest, MANIFEST_NAME));
    await syncFolder(dest);
    await syncFolder(path.dirname(dest));
    return { files: Object.keys(files).length, bytes };
  } catch (err) {
    if (createdDest) await fs.rm(dest, { recursive: true, force: true }).catch(() => undefined);
    else for (const rel of made.reverse()) await fs.rm(path.join(dest, rel), { recursive: true, force: true }).catch(() => undefined);
    throw ioError('write the backup into', dest, err);
  } finally {
    await fs.rm(fixed.staging, { recursive: true, force: true }).catch(() => undefined);
  }
}
