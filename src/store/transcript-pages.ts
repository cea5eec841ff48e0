// Pages of a transcript cut from one version of its file (Transcript.page and pageFrom,
// transcript.ts): each read checks, through `stillCurrent`, that the file it reads is still the
// version its snapshot describes, and answers undefined when a compaction or removal replaced it
// meanwhile (the caller reads again from the new version).
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import { ioError } from './store-error.js';
import type { Entry } from './transcript-read.js';
import { readForward, readNewest, startOfNewest } from './transcript-read.js';
import type { Snapshot } from './transcript-scan.js';

export interface Page {
  entries: Entry[];
  firstSeq: number;
}

/** Where a forward page ended: the next page starts there without re-reading, while the file is that version. Opaque. */
export interface ForwardCursor {
  /** The seq the next page starts at. */
  readonly seq: number;
  readonly snap: object;
  readonly generation: number;
  readonly offset: number;
}

/** Entries from a seq on (pageFrom): `end` is the seq the next append gets. */
export interface ForwardPage extends Page {
  end: number;
  /** Where to go on from; absent when nothing was read. */
  cursor?: ForwardCursor;
}

/** The page from the file version `snap` describes, or undefined when it was replaced meanwhile. */
export async function pageOf(
  io: Io, file: string, rel: string, snap: Snapshot, stillCurrent: () => boolean, limit: number, before: number | undefined,
): Promise<Page | undefined> {
  const { ino, size, count, firstSeq } = snap;
  const nextSeq = firstSeq + count;
  const upTo = Math.min(before ?? nextSeq, nextSeq);
  if (ino === 0 || upTo <= firstSeq) return { entries: [], firstSeq: Math.max(upTo, firstSeq) };
  const got = await readVersion(io, file, rel, { ino, size, skip: nextSeq - upTo, limit: limit > 0 ? limit : upTo - firstSeq, stillCurrent });
  return got && { entries: got, firstSeq: upTo - got.length };
}

/** The forward page from the file version `snap` describes, or undefined when it was replaced meanwhile. */
export async function forwardOf(
  io: Io, file: string, rel: string, snap: Snapshot, stillCurrent: () => boolean,
  { from, limit, maxBytes, cursor }: { from: number; limit: number; maxBytes: number; cursor: ForwardCursor | undefined },
): Promise<ForwardPage | undefined> {
  const { ino, size, count, firstSeq, generation } = snap;
  const end = firstSeq + count;
  const start = Math.max(from, firstSeq);
  if (ino === 0 || start >= end) return { entries: [], firstSeq: start, end };
  try {
    let offset = 0;
    let skip = 0;
    if (cursor && cursor.snap === snap && cursor.generation === generation && cursor.seq === start && cursor.offset <= size) offset = cursor.offset;
    else if (end - start <= start - firstSeq) offset = await startOfNewest(io, file, { ino, size, stillCurrent, limit: end - start });
    else skip = start - firstSeq;
    const got = await readForward(io, file, { ino, size, stillCurrent, offset, skip, limit: Math.min(limit, end - start), maxBytes });
    // A file that holds fewer entries than its count says ends the read here, rather than never.
    if (got.entries.length === 0) return { entries: [], firstSeq: start, end: start };
    return { entries: got.entries, firstSeq: start, end, cursor: { seq: start + got.entries.length, snap, generation, offset: got.next } };
  } catch (err) {
    if (isErrno(err, 'ESTALE')) return undefined;
    throw ioError('read', rel, err);
  }
}

/**
 * `limit` entries ending `skip` entries before the end of the file version `ino`/`size` (`at`), or
 * undefined when the file on disk is no longer that version (compacted or removed meanwhile).
 */
async function readVersion(
  io: Io, file: string, rel: string, at: { ino: number; size: number; skip: number; limit: number; stillCurrent: () => boolean },
): Promise<Entry[] | undefined> {
  try {
    return await readNewest(io, file, at);
  } catch (err) {
    if (isErrno(err, 'ESTALE')) return undefined;
    throw ioError('read', rel, err);
  }
}
