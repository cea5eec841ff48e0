// What a transcript file cannot say about itself once compaction has cut it: the seq of its first
// line and the usage of the entries it dropped. Written only at compaction (rarely), outside Go's
// layout (Go never reads it), in two copies, each a sealed line (sealed-line.ts):
//   .herrscher-state/transcripts/<name>.json        (the meta)
//   .herrscher-state/transcripts/<name>.json.copy   (the same bytes, written after the meta)
// so one damaged or missing copy loses nothing: the other is used and the damaged one rewritten.
//
// A generation names the file it describes by inode and by a checksum of the file's first bytes
// (an inode number can be reused), and is only used when both match. Compaction writes the meta
// for the new file (keeping the old one's as `prev`) before renaming it into place, so after a
// crash between the two, whichever file is there still finds its own numbers.
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import { HEAD_BYTES, headFits, headOf } from './file-head.js';
import { looksSealed, NewerFormatError, sealLine, unsealLine } from './sealed-line.js';
import { ioError } from './store-error.js';
import type { UsageSum } from './usage.js';
import { sumFromJson, sumToJson } from './usage.js';

export interface Generation {
  /** Inode of the transcript file these numbers describe. */
  ino: number;
  /**
   * `<n>:<crc32 hex>` of the file's first n bytes (n ≤ 4 KiB, what the file held when the meta
   * was written; appends never change them); absent in metas of the first format.
   */
  head?: string;
  /** Seq of the file's first entry. */
  firstSeq: number;
  /** Usage of every entry compaction removed before this file's first entry. */
  dropped: UsageSum;
}

export interface TranscriptMeta extends Generation {
  prev?: Generation;
}

/** The meta of transcript `name` in the side folder `side` (state.json's by default: paths.ts, sideOf). */
export const metaRel = (name: string, side = '.herrscher-state'): string => `${side}/transcripts/${name}.json`;
const COPY_SUFFIX = '.copy';

// The head's definition is file-head.ts'; importers of the meta find it here too.
export { HEAD_BYTES, headOf };

/** Whether a file whose first bytes are `prefix` is the one a generation's `head` describes (none: the first format, the inode is all it says). */
const fitsHead = (head: string | undefined, prefix: Buffer): boolean => head === undefined || headFits(head, prefix);

/** What the copies of a meta said: the generation for the file, and what was wrong with each copy. */
export interface MetaLookup {
  gen?: Generation;
  /** Copies that exist but are damaged (checksum, syntax), or describe neither this file nor its predecessor. */
  damaged: string[];
  /** Copies that are missing. */
  missing: string[];
  /** Whether any copy existed at all (a transcript that was never compacted has none). */
  any: boolean;
}

/**
 * Looks up the generation describing the file with inode `ino` and first bytes `prefix`, in the meta
 * and then its copy. A copy that cannot be read for another reason than absence is an error.
 */
export async function findGeneration(io: Io, file: string, rel: string, ino: number, prefix: Buffer): Promise<MetaLookup> {
  const out: MetaLookup = { damaged: [], missing: [], any: false };
  for (const [f, r] of [[file, rel], [file + COPY_SUFFIX, rel + COPY_SUFFIX]] as const) {
    let text: string;
    try {
      text = (await io.readFile(f)).toString('utf8');
    } catch (err) {
      if (isErrno(err, 'EFTYPE') || isErrno(err, 'EISDIR')) {
        out.any = true;
        out.damaged.push(r); // a folder or a FIFO at its name: a copy that holds nothing
        continue;
      }
      if (!isErrno(err, 'ENOENT')) throw ioError('read', r, err);
      out.missing.push(r);
      continue;
    }
    out.any = true;
    const meta = decodeMeta(text, r);
    const gen = meta && generationFor(meta, ino, prefix);
    if (!gen) {
      out.damaged.push(r);
      continue;
    }
    out.gen ??= gen;
  }
  return out;
}

function generationFor(meta: TranscriptMeta, ino: number, prefix: Buffer): Generation | undefined {
  const fits = (g: Generation | undefined): boolean => g !== undefined && g.ino === ino && fitsHead(g.head, prefix);
  if (fits(meta)) return meta;
  if (fits(meta.prev)) return meta.prev;
  return undefined;
}

/**
 * A meta's text: a sealed line (sealed-line.ts), or the bare JSON of the metas' first format.
 * Damaged: undefined (the caller reports it and uses the other copy). Newer than this build
 * reads: NewerFormatError, so a copy is never rebuilt over it nor the file renumbered.
 */
function decodeMeta(text: string, rel: string): TranscriptMeta | undefined {
  const line = text.trimEnd();
  let v: unknown;
  if (looksSealed(line)) {
    const got = unsealLine(line);
    if ('newer' in got) throw new NewerFormatError(rel, got.newer);
    if ('damaged' in got) return undefined;
    v = got.value;
  } else {
    try {
      v = JSON.parse(line);
    } catch {
      return undefined;
    }
  }
  return asMeta(v);
}

function asGeneration(v: unknown): Generation | undefined {
  const g = v as Record<string, unknown> | null;
  if (!g || typeof g !== 'object' || !Number.isSafeInteger(g.ino) || !Number.isSafeInteger(g.firstSeq)) return undefined;
  const dropped = sumFromJson(g.dropped);
  if (!dropped) return undefined;
  return { ino: g.ino as number, ...(typeof g.head === 'string' ? { head: g.head } : {}), firstSeq: g.firstSeq as number, dropped };
}

function asMeta(v: unknown): TranscriptMeta | undefined {
  const cur = asGeneration(v);
  if (!cur) return undefined;
  const p = (v as { prev?: unknown }).prev;
  if (p === undefined) return cur;
  const prev = asGeneration(p);
  return prev ? { ...cur, prev } : undefined;
}

function encodeGeneration(g: Generation): Record<string, unknown> {
  return { ino: g.ino, head: g.head, firstSeq: g.firstSeq, dropped: sumToJson(g.dropped) };
}

/** Writes the meta and then its copy, each atomically and synced. */
export async function writeMeta(io: Io, file: string, rel: string, meta: TranscriptMeta): Promise<void> {
  const json = JSON.stringify({ ...encodeGeneration(meta), ...(meta.prev ? { prev: encodeGeneration(meta.prev) } : {}) });
  const text = sealLine(json);
  for (const [f, r] of [[file, rel], [file + COPY_SUFFIX, rel + COPY_SUFFIX]] as const) {
    try {
      await io.mkdir(path.dirname(f), 0o700);
      await io.writeAtomic(f, text, { mode: 0o600, sync: true });
      await io.syncDir(path.dirname(f));
    } catch (err) {
      throw ioError('write', r, err);
    }
  }
}

export async function removeMeta(io: Io, file: string, rel: string): Promise<void> {
  for (const [f, r] of [[file, rel], [file + COPY_SUFFIX, rel + COPY_SUFFIX]] as const) {
    try {
      await io.unlink(f);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw ioError('remove', r, err);
    }
  }
}

// ---- the summary appends keep (restart in O(sessions)) ---------------------------------------
// `<name>.summary`: what the first usage/last/infos after a start would otherwise scan the whole
// file for, as of the file's first `size` bytes. Written inside an append (the one that passes
// SUMMARY_EVERY_BYTES since the last, or that compacted: transcript.ts), never after a call
// returned. It is only a shortcut: it is believed only when it names the file (inode, checksum of
// its first bytes) and ends within it; the bytes past its end (appended since, by us or by Go)
// are scanned and added. Anything else (cut, replaced, damaged, missing) means a whole scan, as
// before. So it needs neither a second copy nor a sync: a torn or lost summary fails its checksum
// or is absent, and costs one scan.

/** The summary's path and relative name beside the meta's (`<name>.json` -> `<name>.summary`). */
export const summaryBeside = (metaFile: string, metaRelPath: string): [string, string] =>
  [metaFile.replace(/\.json$/, '.summary'), metaRelPath.replace(/\.json$/, '.summary')];

export interface Summary {
  /** Inode, size and `head` of the file described (its first `size` bytes: the file may have grown since). */
  ino: number;
  size: number;
  head: string;
  /** Entries in the file, the seq of the first, and the ts of the newest a full read returns. */
  count: number;
  firstSeq: number;
  lastTs: string;
  /** Usage compaction removed, and usage of every entry ever appended. */
  dropped: UsageSum;
  total: UsageSum;
}

/** Which transcript file a summary must describe: its inode, size (at least the summary's) and first bytes. */
export interface SummarizedFile {
  ino: number;
  size: number;
  prefix: Buffer;
}

/** The summary at `file` if it describes the first bytes of `of` (the transcript as it is now); undefined otherwise. */
export async function readSummary(
  io: Io, file: string, rel: string, { ino, size, prefix }: SummarizedFile,
  /** Told when the summary's name holds something else than a file (a folder, a FIFO): it is ignored. */
  ignored: (why: string) => void = () => undefined,
): Promise<Summary | undefined> {
  let text: string;
  try {
    text = (await io.readFile(file)).toString('utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined; // never written, or removed: scan
    // Only a shortcut: something else at its name costs a scan, never the read it would speed up.
    if (isErrno(err, 'EFTYPE') || isErrno(err, 'EISDIR')) {
      ignored(`${rel} is not a regular file (${(err as Error).message}); ignored, the transcript is scanned instead`);
      return undefined;
    }
    throw ioError('read', rel, err);
  }
  // Damaged, or of a newer format than this build reads: only a shortcut, so the file is scanned
  // (and the next clean stop writes one this build reads).
  const got = unsealLine(text.trimEnd());
  if (!('value' in got)) return undefined;
  const v = got.value as Record<string, unknown>;
  const ints = ['ino', 'size', 'count', 'firstSeq'] as const;
  if (!v || typeof v !== 'object' || !ints.every((k) => Number.isSafeInteger(v[k]))) return undefined;
  if (typeof v.head !== 'string' || typeof v.lastTs !== 'string') return undefined;
  const dropped = sumFromJson(v.dropped);
  const total = sumFromJson(v.total);
  if (!dropped || !total) return undefined;
  const s: Summary = {
    ino: v.ino as number, size: v.size as number, head: v.head, count: v.count as number, firstSeq: v.firstSeq as number,
    lastTs: v.lastTs, dropped, total,
  };
  // The head covers min(s.size, HEAD_BYTES) bytes, which appends since never changed.
  const fits = s.ino === ino && s.size <= size && headFits(s.head, prefix.subarray(0, Math.min(s.size, HEAD_BYTES)))
    && total.entries === dropped.entries + s.count;
  return fits ? s : undefined;
}

/** Writes the summary atomically (not synced: see above). */
export async function writeSummary(io: Io, file: string, rel: string, s: Summary): Promise<void> {
  const json = JSON.stringify({ ...s, dropped: sumToJson(s.dropped), total: sumToJson(s.total) });
  try {
    await io.mkdir(path.dirname(file), 0o700);
    await io.writeAtomic(file, sealLine(json), { mode: 0o600, sync: false });
  } catch (err) {
    throw ioError('write', rel, err);
  }
}

export async function removeSummary(io: Io, file: string, rel: string): Promise<void> {
  try {
    await io.unlink(file);
  } catch (err) {
    if (!isErrno(err, 'ENOENT')) throw ioError('remove', rel, err);
  }
}
