// Restoring a backup (store/backup.ts) as a new state dir: checked first (verify), written into a
// fresh folder beside the target and renamed into place once every file and folder is synced, so
// a target is either untouched or holds the whole backup. The side files that name files by
// inode (metas) are written anew for the restored files, from the numbering the manifest kept,
// and the seq high-water marks with them: the restored transcripts number their entries as the
// originals did. The idempotency keys the backup holds go into the new side folder as they are
// (they name no inode): a write answered before the backup and sent again is answered as it was.
// A restore that fails at any step, the last folder sync after the rename included, leaves the
// place as it found it (the restored folder moved out and removed, an empty target folder made
// again, the folders made above it removed) and says so. docs/operations.md, "Restore".
import { randomUUID } from 'node:crypto';
import { constants as C } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import { realpathOfNearest } from './backup-dest.js';
import type { BackupManifest } from './backup-manifest.js';
import { BACKUP_SIDE } from './backup-manifest.js';
import { copyPrefix, syncFolder } from './file-copy.js';
import { HighWater, highWaterRelIn } from './high-water.js';
import type { Io } from './io.js';
import { nodeIo } from './io.js';
import { lockHolder } from './lock-probe.js';
import { statePaths } from './paths.js';
import { ioError, StoreError } from './store-error.js';
import { storeLog } from './store-log.js';
import { HEAD_BYTES, headOf, metaRel, writeMeta } from './transcript-meta.js';
import { sumFromJson } from './usage.js';
import type { VerifyReport } from './verify.js';
import { formatProblem, verifyStateDir } from './verify.js';

/** A restore refused before anything was written: why, and the backup's problems when it failed verify. */
export class RestoreRefused extends Error {
  override readonly name = 'RestoreRefused';
  constructor(message: string, readonly report?: VerifyReport) {
    super(message);
  }
}

export interface Restored {
  statePath: string;
  /** The backup's revision and epoch; null for a backup taken with no server running (`offline`). */
  revision: number | null;
  epoch: string | null;
  offline: boolean;
  createdAt: string;
  files: number;
}

/** The store's calls, with folder syncs that follow a link at the folder's name (a state dir's parent may be one, as /data → /mnt/data). */
const restoreIo: Io = { ...nodeIo, syncDir: syncFolder };

/**
 * Restores the backup in `backupDir` as the state file `statePath` (its folder must not exist, or
 * be empty). `io`: the renames and folder syncs go through it (tests inject failures there).
 */
export async function restoreBackup(backupDir: string, statePath: string, io: Io = restoreIo): Promise<Restored> {
  const report = await verifyStateDir(backupDir);
  if (!report.backup) throw new RestoreRefused(`${backupDir} is not a backup: it has no backup-manifest.json (an unfinished backup has none)`);
  if (report.problems.length > 0 || !report.manifest) {
    throw new RestoreRefused(`the backup in ${backupDir} failed verify (${report.problems.length} problem(s)); nothing was restored:\n`
      + report.problems.map(formatProblem).join('\n'), report);
  }
  const manifest = report.manifest;
  const paths = statePaths(statePath);
  // Inside the backup, the restored files would become extra files of the backup: it would no longer verify.
  const [from, into] = await Promise.all([fs.realpath(backupDir), realpathOfNearest(paths.dir)]);
  if (into === from || into.startsWith(`${from}${path.sep}`)) {
    throw new RestoreRefused(`${paths.dir} is inside the backup ${from}: restore elsewhere (a restore never changes its backup); nothing was restored`);
  }
  // An empty target folder the rename replaces: a failed restore makes it again, with its mode.
  const emptyTarget = await checkTarget(paths.dir, paths.serverLockPath);
  const parent = path.dirname(paths.dir);
  const tmp = path.join(parent, `.${path.basename(paths.dir)}.restore-${randomUUID()}`);
  // The folders above the target that this restore makes: a failed one removes them again.
  const made = await missingFolders(parent);
  let placed = false;
  try {
    await fs.mkdir(parent, { recursive: true, mode: 0o700 });
    await fs.mkdir(tmp, { mode: 0o700 });
    await writeFiles(io, backupDir, tmp, path.basename(paths.statePath), paths.side, manifest);
    try {
      await io.rename(tmp, paths.dir);
    } catch (err) {
      if (isErrno(err, 'ENOTEMPTY') || isErrno(err, 'EEXIST')) {
        throw new RestoreRefused(`${paths.dir} is no longer empty (something, perhaps a server, started in it meanwhile); nothing was restored`);
      }
      throw err;
    }
    placed = true;
    // Until this sync the rename may not survive a power loss: a restore that cannot make it
    // durable has not restored (a later start could find the old place, or half of the new).
    await io.syncDir(parent);
  } catch (err) {
    const undone = placed ? await moveOut(io, paths.dir, tmp, emptyTarget) : { remakeErr: undefined };
    await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    await removeFolders(made);
    if (placed) {
      // The errno's own words (ioError's), and what became of the restored folder.
      const { code, message } = ioError('sync', path.dirname(paths.dir), err);
      const what = 'err' in undone
        ? `and it could not be moved out again (${ioError('rename', paths.dir, undone.err).message}): the restored folder is left at ${paths.dir}; remove it before restoring again`
        : undone.remakeErr === undefined
          ? 'the restored folder was moved out again and removed: nothing was restored'
          : `the restored folder was moved out again and removed: nothing was restored; the empty folder it had replaced could not be made again (${ioError('mkdir', paths.dir, undone.remakeErr).message})`;
      throw new StoreError('io', `restore into ${paths.dir}: the folder above it could not be synced after the rename (${message}); ${what}`, { code }, code);
    }
    throw err instanceof RestoreRefused || err instanceof StoreError ? err : ioError('restore into', paths.dir, err);
  }
  return {
    statePath: paths.statePath, revision: manifest.revision, epoch: manifest.epoch, offline: manifest.offline, createdAt: manifest.createdAt,
    files: Object.keys(manifest.files).length,
  };
}

/**
 * Moves a restored folder out of the target's place again (to `tmp`, which the caller removes),
 * making again the empty folder it replaced; the parent's sync is tried again, so the place as it
 * was found is what survives a power loss when the disk lets it (its failure is the one the
 * caller reports already). Returns `err` when the folder could not be moved out (the restored
 * folder is then still in place), else `remakeErr` when the empty folder could not be made again.
 */
async function moveOut(io: Io, dir: string, tmp: string, emptyTarget: { mode: number } | undefined): Promise<{ err: unknown } | { remakeErr: unknown }> {
  try {
    await io.rename(dir, tmp);
  } catch (err) {
    return { err };
  }
  let remakeErr: unknown;
  // chmod after mkdir: the mode as it was, whatever the umask.
  if (emptyTarget) await fs.mkdir(dir).then(() => fs.chmod(dir, emptyTarget.mode)).catch((err: unknown) => (remakeErr = err));
  await io.syncDir(path.dirname(dir)).catch(() => undefined);
  return { remakeErr };
}

/** `dir` and each folder above it that does not exist, the deepest first. */
async function missingFolders(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (let at = dir; at !== path.dirname(at); at = path.dirname(at)) {
    try {
      await fs.lstat(at);
      break;
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) break;
      out.push(at);
    }
  }
  return out;
}

/**
 * Removes the empty folders `made` (the deepest first), so a failed restore leaves no trace; one
 * that holds anything now (someone else's since) is left, and with it every folder above.
 */
async function removeFolders(made: readonly string[]): Promise<void> {
  for (const dir of made) {
    try {
      await fs.rmdir(dir);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) return;
    }
  }
}

/**
 * Refuses a target that is not a folder, or holds anything (naming the server when one serves
 * it); returns the mode of an empty folder there (undefined: none).
 */
async function checkTarget(dir: string, serverLockPath: string): Promise<{ mode: number } | undefined> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined;
    if (isErrno(err, 'ENOTDIR')) throw new RestoreRefused(`${dir} exists and is not a folder; nothing was restored`);
    throw err;
  }
  if (names.length === 0) return { mode: (await fs.stat(dir)).mode & 0o7777 };
  const holder = lockHolder(serverLockPath);
  throw new RestoreRefused(holder
    ? `a server serves ${dir}${holder.pid ? ` (pid ${holder.pid})` : ''}: stop it, and restore into a new or empty folder; nothing was restored`
    : `${dir} exists and is not empty: restore into a new or empty folder (a restore never overwrites a state dir); nothing was restored`);
}

async function writeFiles(io: Io, backupDir: string, tmp: string, stateBase: string, side: string, m: BackupManifest): Promise<void> {
  const folders = new Set<string>();
  for (const [rel, want] of Object.entries(m.files)) {
    // The backup's state file is state.json and its side folder that one's; the target's are named by --state.
    const to = rel === 'state.json' ? stateBase : rel.startsWith(`${BACKUP_SIDE}/`) ? `${side}/${rel.slice(BACKUP_SIDE.length + 1)}` : rel;
    const folder = path.dirname(to);
    if (folder !== '.' && !folders.has(folder)) {
      await fs.mkdir(path.join(tmp, folder), { recursive: true, mode: 0o700 });
      folders.add(folder);
    }
    const got = await copyPrefix(path.join(backupDir, rel), path.join(tmp, to));
    if (got.size !== want.size || got.sha256 !== want.sha256) throw new RestoreRefused(`${rel} changed in the backup while it was restored; nothing was restored`);
  }
  const log = storeLog({ error: (message) => {
    throw new Error(message);
  } });
  for (const [name, n] of Object.entries(m.numbering)) {
    const rel = `transcripts/${name}.jsonl`;
    if (!Object.prototype.hasOwnProperty.call(m.files, rel)) continue;
    const dropped = sumFromJson(n.dropped);
    if (!dropped) throw new RestoreRefused(`the manifest's numbering of ${JSON.stringify(name)} holds no usage sum; nothing was restored`);
    const fh = await fs.open(path.join(tmp, rel), C.O_RDONLY);
    let ino: number;
    const prefix = Buffer.alloc(HEAD_BYTES);
    let got: number;
    try {
      ino = (await fh.stat()).ino;
      got = (await fh.read(prefix, 0, HEAD_BYTES, 0)).bytesRead;
    } finally {
      await fh.close();
    }
    const meta = metaRel(name, side);
    // The store's Io makes one folder at a time (never a removed state dir again): the restore's own new tree is made here.
    await fs.mkdir(path.dirname(path.join(tmp, meta)), { recursive: true, mode: 0o700 });
    await writeMeta(nodeIo, path.join(tmp, meta), meta, { ino, head: headOf(prefix.subarray(0, got)), firstSeq: n.firstSeq, dropped });
  }
  if (Object.values(m.seqMarks).some((next) => next > 0)) await fs.mkdir(path.join(tmp, side), { recursive: true, mode: 0o700 });
  const marks = await HighWater.load(nodeIo, tmp, log, highWaterRelIn(side));
  for (const [name, next] of Object.entries(m.seqMarks)) marks.raise(name, next);
  await marks.save();
  // Each folder written, and each folder above it (the side folder may be two deep).
  const toSync = new Set<string>();
  for (const folder of [...folders, side]) for (let f = folder; f !== '.'; f = path.dirname(f)) toSync.add(f);
  for (const f of toSync) {
    await io.syncDir(path.join(tmp, f)).catch((err: unknown) => {
      if (!isErrno(err, 'ENOENT')) throw err; // no side file to write: none made
    });
  }
  await io.syncDir(tmp);
}
