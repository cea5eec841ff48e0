// What a transcript file cannot say about itself once compaction has cut it: the seq of its first
// line and the usage of the entries it dropped. Written only at compaction (rarely), as
// .herrscher-state/transcripts/<name>.json, outside Go's layout (Go never reads it).
//
// The meta names the file it describes by inode. Compaction writes the meta for the new file
// (keeping the old one's as `prev`) before renaming it into place, so after a crash between the
// two, whichever file is there still finds its own numbers.
import path from 'node:path';
import type { Io } from './io.js';
import { ioError } from './store-error.js';
import type { Usage } from './usage.js';

export interface Generation {
  /** Inode of the transcript file these numbers describe. */
  ino: number;
  /** Seq of the file's first entry. */
  firstSeq: number;
  /** Usage of every entry compaction removed before this file's first entry. */
  dropped: Usage;
}

export interface TranscriptMeta extends Generation {
  prev?: Generation;
}

export const metaRel = (name: string): string => `.herrscher-state/transcripts/${name}.json`;

export async function readMeta(io: Io, file: string): Promise<TranscriptMeta | undefined> {
  try {
    return JSON.parse((await io.readFile(file)).toString('utf8')) as TranscriptMeta;
  } catch {
    // Missing (never compacted) or unreadable: the file's own lines are all there is.
    return undefined;
  }
}

/** The generation describing the file with inode `ino`, if the meta knows it. */
export function generationFor(meta: TranscriptMeta | undefined, ino: number): Generation | undefined {
  if (!meta) return undefined;
  if (meta.ino === ino) return meta;
  if (meta.prev?.ino === ino) return meta.prev;
  return undefined;
}

export async function writeMeta(io: Io, file: string, rel: string, meta: TranscriptMeta): Promise<void> {
  try {
    await io.mkdir(path.dirname(file), 0o700);
    await io.writeAtomic(file, JSON.stringify(meta), { mode: 0o600, sync: true });
    await io.syncDir(path.dirname(file));
  } catch (err) {
    throw ioError('write', rel, err);
  }
}

export async function removeMeta(io: Io, file: string, rel: string): Promise<void> {
  try {
    await io.unlink(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError('remove', rel, err);
  }
}
