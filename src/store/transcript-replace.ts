// The replace at the heart of a transcript's compaction (transcript.ts runs it inside the file's
// queue): the newest lines written to a temp file and synced, the meta for the new file and the
// seq mark saved, the keys' lines carried, then the rename, which is the commit point. A failure
// leaves the file as it was and is logged; the caller retries after the next append, as Go does.
import { headOf } from './file-head.js';
import { isErrno } from '../common/errno.js';
import type { AppendKeys } from './append-keys.js';
import type { Io } from './io.js';
import type { StoreLog } from './store-log.js';
import type { Newest } from './transcript-compact.js';
import { newestOfFile, prefixOf } from './transcript-compact.js';
import type { TranscriptMeta } from './transcript-meta.js';
import { writeMeta } from './transcript-meta.js';
import type { SeqMark } from './transcript-options.js';
import type { Snapshot } from './transcript-scan.js';

/** The files and helpers of the transcript being compacted. */
export interface CompactionFiles {
  readonly io: Io;
  /** The .jsonl file, absolute, and its name relative to the state dir. */
  readonly file: string;
  readonly rel: string;
  /** Its meta, absolute and relative to the state dir. */
  readonly metaFile: string;
  readonly metaRelPath: string;
  readonly log: StoreLog;
  readonly mark: SeqMark;
  readonly keys: AppendKeys | undefined;
}

/**
 * Replaces the file with its newest entries (Go's compactTranscript) and, once renamed, updates
 * `snap` to describe the new file. Resolves with the new file's head, or undefined when nothing
 * was replaced (nothing to keep, or a failure, which is logged).
 */
export async function replaceWithNewest(t: CompactionFiles, snap: Snapshot): Promise<string | undefined> {
  const tmp = `${t.file}.compact`;
  let ino = 0;
  let newest: Newest;
  let next: TranscriptMeta;
  try {
    newest = await newestOfFile(t.io, t.file, snap.dropped);
    if (newest.count === 0) return undefined;
    // A crash's leftover is swept at start; whatever is at the name now is removed, not written
    // through (O_EXCL: a link planted there is never followed).
    await t.io.unlink(tmp).catch((err: unknown) => {
      if (!isErrno(err, 'ENOENT')) throw err;
    });
    const fh = await t.io.open(tmp, 'wx', 0o600);
    try {
      await t.io.write(fh, Buffer.concat(newest.lines));
      // On disk before the rename is: else a power loss after it can leave the transcript short or empty.
      await t.io.datasync(fh);
      ino = await t.io.inode(fh);
    } finally {
      await fh.close();
    }
    next = {
      ino,
      head: headOf(prefixOf(newest.lines)),
      firstSeq: snap.firstSeq + newest.count - newest.lines.length,
      dropped: newest.removed,
      prev: { ino: snap.ino, ...(snap.head === undefined ? {} : { head: snap.head }), firstSeq: snap.firstSeq, dropped: snap.dropped },
    };
    await writeMeta(t.io, t.metaFile, t.metaRelPath, next);
    t.mark.raise(next.firstSeq + newest.lines.length);
    await t.mark.save();
    // The keys' lines name places in the old file: written again without them first (append-keys.ts).
    await t.keys?.carry(t.rel, snap.ino);
    await t.io.rename(tmp, t.file);
  } catch (err) {
    await removeTemp(t, tmp);
    t.log.error(`compaction of ${t.rel} failed; the file is left as it was and compaction is retried after the next append`, err);
    return undefined;
  }
  // The rename is the commit point: from here the new file is the transcript.
  Object.assign(snap, {
    ino, head: next.head, size: newest.lines.reduce((n, l) => n + l.length, 0), count: newest.lines.length, firstSeq: next.firstSeq,
    dropped: next.dropped, generation: snap.generation + 1,
  });
  return next.head as string;
}

/** Removes a failed compaction's temp file; absent is fine (it failed before creating it). */
async function removeTemp(t: CompactionFiles, tmp: string): Promise<void> {
  try {
    await t.io.unlink(tmp);
  } catch (err) {
    if (!isErrno(err, 'ENOENT')) t.log.error(`removing ${t.rel}.compact after a failed compaction failed; it is swept at the next start`, err);
  }
}
