// Step 1 of a backup (backup.ts): while no write is in flight, every file the store owns is
// hard-linked into a staging folder of the side folder, its size noted, and what the side files
// say about numbering read. A transcript or journal only grows past that size (appends) or is
// replaced by another inode (compaction, removal, state.json's atomic replace), so the linked
// inode's first `size` bytes stay exactly what was there at that moment.
import { randomUUID } from 'node:crypto';
import { constants as C } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import { encodeAppendKeys } from './append-keys-log.js';
import type { BackupSource } from './backup.js';
import type { Numbering } from './backup-manifest.js';
import { KEY_FILES } from './backup-manifest.js';
import { FILES_AT_ONCE, inParallel } from './backup-parallel.js';
import { copyPrefix } from './file-copy.js';
import { nodeIo } from './io.js';
import { isPathComponent } from './paths.js';
import { ioError } from './store-error.js';
import { findGeneration, HEAD_BYTES, metaRel } from './transcript-meta.js';
import { sumToJson } from './usage.js';
import { encodeStateKeys } from './state-keys.js';

/** One file as fixed: where its bytes are kept until they are copied, and how many count. */
export interface Fixed {
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

/** Staging folders live in the side folder under this prefix; one left by a crash is removed by the next backup. */
export const STAGING_PREFIX = 'backup-staging-';

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
