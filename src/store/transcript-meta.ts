// What a transcript file cannot say about itself once compaction has cut it: the seq of its first
// line and the usage of the entries it dropped. Written only at compaction (rarely), outside Go's
// layout (Go never reads it), in two copies, each checksummed:
//   .herrscher-state/transcripts/<name>.json        (the meta)
//   .herrscher-state/transcripts/<name>.json.copy   (the same bytes, written after the meta)
// so one damaged or missing copy loses nothing: the other is used and the damaged one rewritten.
//
// A generation names the file it describes by inode and by a checksum of the file's first bytes
// (an inode number can be reused), and is only used when both match. Compaction writes the meta
// for the new file (keeping the old one's as `prev`) before renaming it into place, so after a
// crash between the two, whichever file is there still finds its own numbers.
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
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

export const metaRel = (name: string): string => `.herrscher-state/transcripts/${name}.json`;
const COPY_SUFFIX = '.copy';

const checksum = (data: string | Buffer): string => crc32(data).toString(16).padStart(8, '0');

/** How many of a file's first bytes a generation's `head` covers at most. */
export const HEAD_BYTES = 4096;

/** The `head` of a file whose first bytes are `prefix` (at most HEAD_BYTES of it are used). */
export function headOf(prefix: Buffer): string {
  const n = Math.min(prefix.length, HEAD_BYTES);
  return `${n}:${checksum(prefix.subarray(0, n))}`;
}

/** Whether a file whose first bytes are `prefix` (HEAD_BYTES, or the whole file) is the one `head` describes. */
function headFits(head: string | undefined, prefix: Buffer): boolean {
  if (head === undefined) return true; // first format: the inode is all it says
  const m = /^(\d+):([0-9a-f]{8})$/.exec(head);
  const n = Number(m?.[1]);
  return m !== null && n <= prefix.length && checksum(prefix.subarray(0, n)) === m[2];
}

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
      if (!isErrno(err, 'ENOENT')) throw ioError('read', r, err);
      out.missing.push(r);
      continue;
    }
    out.any = true;
    const meta = decodeMeta(text);
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
  const fits = (g: Generation | undefined): boolean => g !== undefined && g.ino === ino && headFits(g.head, prefix);
  if (fits(meta)) return meta;
  if (fits(meta.prev)) return meta.prev;
  return undefined;
}

/** A meta's text: `<crc32 of json> <json>` (v2), or the bare JSON of the first format (v1). */
function decodeMeta(text: string): TranscriptMeta | undefined {
  let json = text.trimEnd();
  if (/^[0-9a-f]{8} /.test(json)) {
    const body = json.slice(9);
    if (checksum(body) !== json.slice(0, 8)) return undefined;
    json = body;
  }
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch {
    return undefined; // damaged: the caller reports it and uses the other copy
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
  const text = `${checksum(json)} ${json}\n`;
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
