// An online backup of a state dir, in two steps so that writes wait only for the first:
//  1. fix (no write in flight; the caller holds them back): every file the store owns is hard-
//     linked into a staging folder of the side folder, its size noted, and what the side files
//     say about numbering read. A transcript or journal only grows past that size (appends) or
//     is replaced by another inode (compaction, removal, state.json's atomic replace), so the
//     linked inode's first `size` bytes stay exactly what was there at that moment.
//  2. write (writes flow again): those bytes are copied into DEST, synced file by file and
//     folder by folder, the manifest written last, the staging folder removed.
// The copy names no inode: the metas (which do) are not copied, their numbering goes into the
// manifest, and a restore writes metas for its own files. The idempotency keys the store answered
// by are written anew from memory (the files name inodes and state.json stamps), so a write sent
// again after a restore is answered as it was. docs/operations.md, "Back up".
import { randomUUID } from 'node:crypto';
import { constants as C } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import { encodeAppendKeys } from './append-keys.js';
import type { ManifestFile, Numbering } from './backup-manifest.js';
import { encodeManifest, KEY_FILES, MANIFEST_NAME, UNFINISHED_NAME } from './backup-manifest.js';
import { copyPrefix, syncFolder, writeNewFile } from './file-copy.js';
import { nodeIo } from './io.js';
import { isPathComponent } from './paths.js';
import { ioError, StoreError } from './store-error.js';
import { findGeneration, HEAD_BYTES, metaRel } from './transcript-meta.js';
import { sumToJson } from './usage.js';
import { encodeStateKeys } from './state-keys.js';
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

/** One file as fixed: where its bytes are kept until they are copied, and how many count. */
interface Fixed {
  rel: string;
  /** A hard link in the staging folder (or a copy, see fixFile). */
  held: string;
  size: number;
}

/** A backup fixed and not yet written. */
export interface FixedBackup {
  source: BackupSource;
  /** Taken with no server running (the manifest then names no revision). */
  offline: boolean;
  createdAt: string;
  staging: string;
  files: Fixed[];
  numbering: Record<string, Numbering>;
  /** The side files written from memory (the keys), by path in the backup: only those that hold any. */
  written: { rel: string; text: string }[];
}

/**
 * Files handled at once: each step is a few system calls through libuv's thread pool, so a few
 * dozen in flight keep it busy where one at a time waited for each round trip (2000 sessions took
 * seconds to fix, with every write held meanwhile). Each holds at most two descriptors.
 */
const FILES_AT_ONCE = 32;

/** `fn` over `items`, at most `n` at once; the results in the items' order. */
async function inParallel<T, R>(items: readonly T[], n: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}

/** Staging folders live in the side folder under this prefix; one left by a crash is removed by the next backup. */
export const STAGING_PREFIX = 'backup-staging-';

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

/**
 * Step 1: fixes what the store's files hold now. Call it while no write is in flight and none
 * can start (the server holds them back; an offline backup owns the lock). No data is copied
 * (but for a torn tail, below): a link, an open, a stat and a one-byte read per file, and the
 * metas of compacted transcripts, FILES_AT_ONCE at a time.
 */
export async function fixBackup(source: BackupSource, offline = false): Promise<FixedBackup> {
  const { dir, side } = source;
  await removeStaleStaging(path.join(dir, side));
  const staging = path.join(dir, side, `${STAGING_PREFIX}${randomUUID()}`);
  try {
    await fs.mkdir(staging, { mode: 0o700 });
  } catch (err) {
    throw ioError('create', path.relative(dir, staging), err);
  }
  const written = [
    ...(source.writerKeys.length > 0 ? [{ rel: KEY_FILES.stateKeys, text: encodeStateKeys(source.writerKeys) }] : []),
    ...(source.appendKeys.length > 0 ? [{ rel: KEY_FILES.appendKeys, text: encodeAppendKeys(source.appendKeys) }] : []),
  ];
  const fixed: FixedBackup = { source, offline, createdAt: new Date().toISOString(), staging, files: [], numbering: {}, written };
  try {
    const rels = ['state.json', ...(await storeFiles(dir, 'transcripts', '.jsonl')), ...(await storeFiles(dir, 'participants', '.log'))];
    const from = (rel: string): string => path.join(dir, rel === 'state.json' ? path.basename(source.statePath) : rel);
    const got = await inParallel(rels, FILES_AT_ONCE, (rel, i) => fixFile(from(rel), rel, staging, i));
    fixed.files = got.filter((f): f is Fixed => f !== undefined);
    const metas = new Set(await metaNames(path.join(dir, side, 'transcripts')));
    await inParallel(fixed.files, FILES_AT_ONCE, async (f) => {
      const name = /^transcripts\/(.+)\.jsonl$/s.exec(f.rel)?.[1];
      if (name !== undefined && (metas.has(`${name}.json`) || metas.has(`${name}.json.copy`))) await fixNumbering(fixed, name, f);
    });
  } catch (err) {
    await fs.rm(staging, { recursive: true, force: true });
    throw err;
  }
  return fixed;
}

/** `<folder>/<name><ext>` for each regular file whose name the store could have written. */
async function storeFiles(dir: string, folder: string, ext: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(path.join(dir, folder));
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw ioError('list', folder, err);
  }
  return names.filter((n) => n.endsWith(ext) && isPathComponent(n.slice(0, -ext.length))).sort().map((n) => `${folder}/${n}`);
}

/**
 * Holds one file's current bytes: a hard link and its size. A file whose last line is not
 * finished (a torn tail a crash left; the next append may cut it) is copied now instead, as is
 * any file the file system will not link. undefined when there is no such regular file.
 */
async function fixFile(file: string, rel: string, staging: string, index: number): Promise<Fixed | undefined> {
  const held = path.join(staging, String(index));
  try {
    let linked = true;
    try {
      await fs.link(file, held);
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return undefined; // none, or removed since it was listed
      if (!isErrno(err, 'EXDEV') && !isErrno(err, 'EPERM') && !isErrno(err, 'EMLINK')) throw err;
      linked = false;
    }
    const end = await endOf(linked ? held : file);
    if (end === undefined) {
      if (linked) await fs.unlink(held);
      return undefined; // not a regular file (a link, a folder): nothing the store wrote
    }
    if (linked && (end.size === 0 || end.last === 0x0a || rel === 'state.json')) return { rel, held, size: end.size };
    if (linked) await fs.unlink(held);
    const { size } = await copyPrefix(file, held);
    return { rel, held, size };
  } catch (err) {
    throw ioError('fix for the backup', rel, err);
  }
}

/** The size and last byte of a regular file (never through a link); undefined for anything else. */
async function endOf(file: string): Promise<{ size: number; last: number | undefined } | undefined> {
  let fh;
  try {
    fh = await fs.open(file, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (err) {
    if (isErrno(err, 'ELOOP')) return undefined;
    throw err;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return undefined;
    const b = Buffer.alloc(1);
    if (st.size > 0) await fh.read(b, 0, 1, st.size - 1);
    return { size: st.size, last: st.size > 0 ? b[0] : undefined };
  } finally {
    await fh.close();
  }
}

/** The numbering of a compacted transcript, from the meta generation that describes the file held. */
async function fixNumbering(fixed: FixedBackup, name: string, f: Fixed): Promise<void> {
  const { dir, side } = fixed.source;
  const rel = metaRel(name, side);
  const fh = await fs.open(f.held, C.O_RDONLY);
  let ino: number;
  const prefix = Buffer.alloc(Math.min(f.size, HEAD_BYTES));
  try {
    ino = (await fh.stat()).ino;
    await fh.read(prefix, 0, prefix.length, 0);
  } finally {
    await fh.close();
  }
  const found = await findGeneration(nodeIo, path.join(dir, rel), rel, ino, prefix);
  if (found.gen && (found.gen.firstSeq > 0 || found.gen.dropped.entries > 0)) {
    fixed.numbering[name] = { firstSeq: found.gen.firstSeq, dropped: sumToJson(found.gen.dropped) };
  }
}

async function metaNames(folder: string): Promise<string[]> {
  try {
    return await fs.readdir(folder);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw err;
  }
}

/** Removes the staging folders a stopped backup left in `sideDir` (the next backup, or the next start, under the lock). */
export async function removeStaleStaging(sideDir: string): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(sideDir);
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return;
    throw err;
  }
  for (const n of names.filter((x) => x.startsWith(STAGING_PREFIX))) await fs.rm(path.join(sideDir, n), { recursive: true, force: true });
}

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
