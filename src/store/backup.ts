// An online backup of a state dir, in two steps so that writes wait only for the first:
//  1. fix (backup-fix.ts; no write in flight, the caller holds them back): every file the store
//     owns is hard-linked into a staging folder, its size noted, the numbering side files read.
//  2. write (backup-write.ts; writes flow again): those bytes are copied into DEST and synced,
//     the manifest written last, the staging folder removed.
// The copy names no inode: the metas (which do) are not copied, their numbering goes into the
// manifest, and a restore writes metas for its own files. The idempotency keys the store answered
// by are written anew from memory (the files name inodes and state.json stamps), so a write sent
// again after a restore is answered as it was. docs/operations.md, "Back up".
import { checkBackupDest } from './backup-dest.js';
import { fixBackup } from './backup-fix.js';
import { writeBackup } from './backup-write.js';
import type { KeyEntries } from './writer-sequences.js';

/** What a store tells a backup about itself (Store.backupSource). */
export interface BackupSource {
  /** The state dir, resolved, and the state file in it. */
  dir: string;
  statePath: string;
  /** The state file's side folder, relative to dir (paths.ts, sideOf). */
  side: string;
  revision: number;
  epoch: string;
  /** The seq high-water marks, by transcript name. */
  marks: ReadonlyMap<string, number>;
  /** The idempotency keys answered so far: of the document's writes, of transcript appends. */
  writerKeys: KeyEntries;
  appendKeys: KeyEntries;
}

/** What `backup` answers: a copy at a revision of the server run that took it. */
export interface BackupResult {
  dest: string;
  revision: number;
  epoch: string;
  createdAt: string;
  files: number;
  bytes: number;
}

/**
 * What a backup taken with no server running returns: the command opened the state itself, so no
 * server run counted its revisions (a revision of the command's own run would say nothing).
 */
export interface OfflineBackupResult extends Omit<BackupResult, 'revision' | 'epoch'> {
  revision: null;
  epoch: null;
  offline: true;
}

/** A store as a backup sees it. */
export interface BackupStore {
  readonly dir: string;
  flush(): Promise<void>;
  backupSource(): BackupSource;
}

/**
 * The whole backup of a store into `dest`: checked, fixed inside `quiet` (which must run its
 * function while no write is in flight and none can start: the server's write hold; an offline
 * store has no writers), then written while writes flow again.
 */
export async function backupStore(store: BackupStore, dest: string, quiet: <T>(fn: () => Promise<T>) => Promise<T> = (fn) => fn()): Promise<BackupResult> {
  await checkBackupDest(dest, store.dir);
  const fixed = await quiet(async () => {
    await store.flush();
    return fixBackup(store.backupSource());
  });
  const { files, bytes } = await writeBackup(fixed, dest);
  return { dest, revision: fixed.source.revision, epoch: fixed.source.epoch, createdAt: fixed.createdAt, files, bytes };
}

/**
 * The backup of a store that the caller opened itself with no server running (it holds the
 * locks, so nothing else writes): as backupStore, but at no server run's revision.
 */
export async function backupOffline(store: BackupStore, dest: string): Promise<OfflineBackupResult> {
  await checkBackupDest(dest, store.dir);
  await store.flush();
  const fixed = await fixBackup(store.backupSource(), true);
  const { files, bytes } = await writeBackup(fixed, dest);
  return { dest, revision: null, epoch: null, offline: true, createdAt: fixed.createdAt, files, bytes };
}
