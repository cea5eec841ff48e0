// The write-ahead log's records (wal.ts writes them, wal-replay.ts puts them back): a sealed line
// (sealed-line.ts) of {f: file relative to the state dir, i: its inode, h: the head of its first
// bytes that are durable in the file itself (file-head.ts), o: its size before the append, d: the
// bytes appended, s: for a transcript, the seq after them, k: the idempotency keys of its appends}.
// A file's first append is durable in the file itself: its record has no bytes (`d: ""`), names
// the file by the append's own bytes, and carries only the seq and keys. A complete line that is
// not such a record is damaged (skipped, never guessed at).
import { HEAD_PATTERN } from './file-head.js';
import { sealLine, unsealLine } from './sealed-line.js';

/** The log of `state.json`; another state file's is in its own side folder (paths.ts, sideOf). */
export const WAL_REL = '.herrscher-state/wal.log';
/** The log in the side folder `side` (relative to the state dir). */
export const walRelIn = (side: string): string => `${side}/wal.log`;

export interface WalRecord {
  /** The file, relative to the state dir. */
  readonly f: string;
  readonly i: number;
  /**
   * The head of the file (file-head.ts) over its first bytes (HEAD_BYTES at most) that were durable
   * in the file itself when the record was written (its first append's, or what it held when
   * opened): with the inode, what names the file. Absent in records of 0.1.0 and earlier, which
   * name it by inode alone.
   */
  readonly h?: string;
  readonly o: number;
  readonly d: string;
  /** For a transcript: the seq after this record's entries (the replay raises the high-water mark to it). */
  readonly s?: number;
  /**
   * The idempotency keys of its appends (append-keys.ts), each [writer id, writer seq, the seq
   * the append got]: durable with the record, so a replay that puts the bytes back keeps their keys.
   */
  readonly k?: readonly (readonly [string, number, number])[];
}

/** An appended key a replay kept (WalRecord's `k`, one of them). */
export type ReplayedKey = readonly [writer: string, writerSeq: number, seq: number];

/** A record as the line the log holds. */
export const encodeRecord = (r: WalRecord): Buffer => Buffer.from(sealLine(JSON.stringify(r)));

/** A log's records, and the complete lines that are not records (damaged: skipped, never guessed at). */
export interface WalScan {
  records: WalRecord[];
  /** 1-based line numbers of the damaged lines, and why each is. */
  damaged: { line: number; why: string }[];
  /** The first line of a newer format than this build reads (the scan stops there; replay refuses to go on). */
  newer?: { line: number; version: number };
}

/**
 * Every record of a log's bytes (sealed lines: sealed-line.ts). A complete line whose checksum
 * fails or whose record is not of the shape this server writes is damaged: it is skipped and
 * reported, and the records after it are still read (one bad sector must not drop every
 * acknowledged append behind it). Bytes after the last newline are a torn write of a batch never
 * acknowledged: ignored. A line of a newer format ends the scan (`newer`).
 */
export function scanWal(buf: Buffer): WalScan {
  const out: WalScan = { records: [], damaged: [] };
  let start = 0;
  let line = 0;
  for (let end = buf.indexOf(0x0a, start); end >= 0; end = buf.indexOf(0x0a, start)) {
    const text = buf.toString('utf8', start, end);
    start = end + 1;
    line++;
    const got = unsealLine(text);
    if ('newer' in got) {
      out.newer = { line, version: got.newer };
      return out;
    }
    if ('damaged' in got) {
      out.damaged.push({ line, why: got.damaged });
      continue;
    }
    const why = recordProblem(got.value);
    if (why) out.damaged.push({ line, why });
    else out.records.push(got.value as WalRecord);
  }
  return out;
}

const isCount = (n: unknown): boolean => Number.isSafeInteger(n) && (n as number) >= 0;
const isKey = (k: unknown): boolean => Array.isArray(k) && k.length === 3 && typeof k[0] === 'string' && isCount(k[1]) && isCount(k[2]);

/** Why `v` is not a record this server writes (undefined when it is one): a checksum can be forged. */
function recordProblem(v: unknown): string | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'not an object';
  const r = v as Record<string, unknown>;
  if (typeof r.f !== 'string') return 'f is not a string';
  if (!isCount(r.i)) return 'i is not an inode number';
  if (r.h !== undefined && (typeof r.h !== 'string' || !HEAD_PATTERN.test(r.h))) return 'h is not a head (<n>:<crc32 hex>)';
  if (!isCount(r.o)) return 'o is not an offset (a whole number ≥ 0)';
  if (typeof r.d !== 'string') return 'd is not a string';
  if (r.s !== undefined && !isCount(r.s)) return 's is not a seq (a whole number ≥ 0)';
  if (r.k !== undefined && !(Array.isArray(r.k) && r.k.every(isKey))) return 'k is not a list of keys ([writer id, seq, seq])';
  return undefined;
}
