// The append keys' log on disk (append-keys.ts keeps the keys): its file name, its lines (a
// sealed line each, sealed-line.ts: a key, its answer, and until checked the place its bytes go),
// the log a backup holds, the keys a write-ahead log replay kept, and the check at a start that a
// place's bytes landed.
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { isErrno } from '../common/errno.js';
import { sealLine, unsealLine } from './sealed-line.js';
import type { Io } from './io.js';
import { ioError } from './store-error.js';
import type { ReplayedKey } from './wal-record.js';
import type { KeyEntries } from './writer-sequences.js';

/** The log's file in the state's side folder. */
export const APPEND_KEYS_FILE = 'append-keys.log';

/** Where a keyed append's bytes go, to check at the next start that they got there. */
export interface AppendPlace {
  /** The file, relative to the state dir. */
  readonly f: string;
  readonly i: number;
  readonly o: number;
  readonly n: number;
  /** crc32 of the bytes. */
  readonly c: number;
}

/** One line (a sealed line, sealed-line.ts): a key, its answer, and (until checked) where its bytes go. */
export interface Line {
  w: string;
  q: number;
  a: { seq: number };
  p?: AppendPlace;
}

/** One line of the log, read: a key, a line of a newer format than this build reads, or a damaged line. */
export function decodeKeyLine(raw: string): { line: Line } | { newer: number } | { damaged: string } {
  const got = unsealLine(raw);
  if ('newer' in got) return { newer: got.newer };
  if ('damaged' in got) return { damaged: 'its checksum does not match (a torn last line is one)' };
  const line = got.value as Line;
  if (typeof line?.w !== 'string' || typeof line.q !== 'number') return { damaged: 'not a key (no writer id and seq)' };
  return { line };
}

export const encodeLines = (lines: readonly Line[]): string => lines.map((l) => sealLine(JSON.stringify(l))).join('');

/**
 * The log for the keys `table` (answers `{seq}`), a line each and no place: what a backup holds
 * and a restore puts in the new side folder (their bytes are in the files copied with them).
 */
export const encodeAppendKeys = (table: KeyEntries): string =>
  encodeLines(table.flatMap(([w, answers]) => answers.map(([q, a]): Line => ({ w, q, a: a as { seq: number } }))));

export const nameOf = (l: Line): string => `${l.w}\u0000${l.q}`;

/**
 * Writes down (appended and synced, before the write-ahead log is emptied) the keys of the
 * records a replay kept: lines without a place, so the start's check keeps them whatever the
 * key's own line said or whether it survived.
 */
export async function keepReplayedKeys(io: Io, file: string, keys: readonly ReplayedKey[]): Promise<void> {
  if (keys.length === 0) return;
  const text = encodeLines(keys.map(([w, q, seq]): Line => ({ w, q, a: { seq } })));
  try {
    const { fh, created } = await openLog(io, file);
    try {
      await io.writeSynced(fh, Buffer.from(text));
      if (created) await io.syncDir(path.dirname(file));
    } finally {
      await fh.close().catch(() => undefined); // written and synced already
    }
  } catch (err) {
    throw ioError('write', path.basename(file), err);
  }
}

/** The log opened for appending, and whether this open made it (its name is then not durable yet). */
export async function openLog(io: Io, file: string): Promise<{ fh: FileHandle; created: boolean }> {
  try {
    return { fh: await io.open(file, 'ax', 0o600), created: true };
  } catch (err) {
    if (!isErrno(err, 'EEXIST')) throw err;
    return { fh: await io.open(file, 'a', 0o600), created: false };
  }
}

/**
 * Whether the bytes of `place` are in its file (the same inode, at its offset). A file that is
 * gone holds none; any other failure to look fails the start: taking it for "not there" would
 * drop the key, and the write's retry would be applied twice.
 */
export async function landed(io: Io, dir: string, place: AppendPlace): Promise<boolean> {
  let fh: FileHandle | undefined;
  try {
    fh = await io.open(path.join(dir, place.f), 'r', 0o600);
    if ((await fh.stat()).ino !== place.i) return false;
    const buf = Buffer.alloc(place.n);
    const { bytesRead } = await fh.read(buf, 0, place.n, place.o);
    return bytesRead === place.n && crc32(buf) === place.c;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return false;
    throw ioError('read', place.f, err);
  } finally {
    await fh?.close().catch(() => undefined); // opened to read: its close loses nothing
  }
}
