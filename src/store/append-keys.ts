// Idempotency keys of transcript appends (writer-sequences.ts says what a key is): an append sent
// again with the key of one already in the file is answered with that one's seq, never written
// twice, also after kill -9 of the server.
//
// Durable with the write: before a batch's bytes are written, one line per keyed append goes to
// `<side>/append-keys.log` saying where its bytes go (file, inode, offset, length, crc32). A crash
// between that line and the write leaves a line whose bytes are not in the file: the next start
// checks each line against the file (after the write-ahead log's replay) and keeps only the keys
// whose bytes are there, then writes the log again with those alone. The line is written with
// write(2) and not synced: a kill -9 keeps it (the page cache), as it keeps the append itself;
// what a power loss keeps of it is not promised (docs/durability.md).
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { isErrno } from '../common/errno.js';
import { NewerFormatError, sealLine, unsealLine } from './sealed-line.js';
import type { Io } from './io.js';
import { ioError } from './store-error.js';
import type { KeyedAnswer, KeyEntries, WriterKey } from './writer-sequences.js';
import { KeyTable } from './writer-sequences.js';

/** The log's file in the state's side folder. */
export const APPEND_KEYS_FILE = 'append-keys.log';

/** Past this size the log is written again with the keys kept alone. */
const REWRITE_BYTES = 1 << 20;

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
interface Line {
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

const encodeLines = (lines: readonly Line[]): string => lines.map((l) => sealLine(JSON.stringify(l))).join('');

/**
 * The log for the keys `table` (answers `{seq}`), a line each and no place: what a backup holds
 * and a restore puts in the new side folder (their bytes are in the files copied with them).
 */
export const encodeAppendKeys = (table: KeyEntries): string =>
  encodeLines(table.flatMap(([w, answers]) => answers.map(([q, a]): Line => ({ w, q, a: a as { seq: number } }))));

export class AppendKeys {
  readonly keys = new KeyTable();
  /** Lines noted whose appends are not answered yet: a rewrite keeps them, with their places. */
  private readonly unsettled = new Map<string, Line>();
  private fh: FileHandle | undefined;
  private size = 0;
  private chain: Promise<void> = Promise.resolve();

  private constructor(
    private readonly io: Io,
    private readonly dir: string,
    private readonly file: string,
  ) {}

  /**
   * Reads the log, keeps the keys whose bytes are in their files, and writes it again with those.
   * `fresh`: its folder was just made (no log to read).
   */
  static async load(io: Io, dir: string, file: string, fresh = false): Promise<AppendKeys> {
    const k = new AppendKeys(io, dir, file);
    if (fresh) return k;
    let text = '';
    try {
      text = (await io.readFile(file)).toString('utf8');
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw ioError('read', path.basename(file), err);
    }
    const kept: KeyedAnswer[] = [];
    for (const raw of text.split('\n')) {
      if (raw === '') continue;
      const got = decodeKeyLine(raw);
      if ('newer' in got) throw new NewerFormatError(path.basename(file), got.newer);
      if ('damaged' in got) continue; // a torn last line: its append was never written either
      const { line } = got;
      if (line.p === undefined || (await k.landed(line.p))) kept.push({ key: { id: line.w, seq: line.q }, answer: line.a });
    }
    k.keys.remember(kept);
    if (text !== '') await k.rewrite();
    return k;
  }

  /**
   * Runs the append `write` under `key`: one already answered is answered again with its seq,
   * one under way is waited for, else `write` runs and its answer is kept. Without a key, `write`
   * just runs.
   */
  keyed(key: WriterKey | undefined, write: (key: WriterKey | undefined) => Promise<number>): Promise<number> {
    if (key === undefined) return write(undefined);
    const done = this.keys.answered(key);
    if (done) return Promise.resolve((done.answer as { seq: number }).seq);
    const pending = this.keys.pending(key) as Promise<number> | undefined;
    if (pending) return pending;
    return this.keys.track(key, write(key).then(
      (seq) => {
        this.settled(key, { seq });
        return seq;
      },
      (err: unknown) => {
        this.settled(key);
        throw err;
      },
    ));
  }

  /** Records the keyed appends of a batch before its bytes are written. */
  note(lines: readonly (KeyedAnswer & { place: AppendPlace })[]): Promise<void> {
    const rows = lines.map(({ key, answer, place }): Line => ({ w: key.id, q: key.seq, a: answer as { seq: number }, p: place }));
    for (const row of rows) this.unsettled.set(`${row.w}\u0000${row.q}`, row);
    const text = encodeLines(rows);
    const run = this.chain.then(async () => {
      if (this.size > REWRITE_BYTES) await this.rewrite();
      try {
        this.fh ??= await this.io.open(this.file, 'a', 0o600);
        await this.io.write(this.fh, Buffer.from(text));
        this.size += Buffer.byteLength(text);
      } catch (err) {
        throw ioError('write', path.basename(this.file), err);
      }
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** The append of `key` is answered (`answer`) or failed (undefined: its bytes were not written). */
  settled(key: WriterKey, answer?: unknown): void {
    this.unsettled.delete(`${key.id}\u0000${key.seq}`);
    if (answer !== undefined) this.keys.remember([{ key, answer }]);
  }

  /** Closes the log. */
  async close(): Promise<void> {
    await this.chain;
    // A close reports no write of ours: every line was written (or failed its caller) already.
    await this.fh?.close().catch(() => undefined);
    this.fh = undefined;
  }

  /**
   * Whether the bytes of `place` are in its file (the same inode, at its offset). A file that is
   * gone holds none; any other failure to look fails the start: taking it for "not there" would
   * drop the key, and the write's retry would be applied twice.
   */
  private async landed(place: AppendPlace): Promise<boolean> {
    let fh: FileHandle | undefined;
    try {
      fh = await this.io.open(path.join(this.dir, place.f), 'r', 0o600);
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

  /** Writes the log again with the keys kept (checked already), atomically. */
  private async rewrite(): Promise<void> {
    const text = encodeAppendKeys(this.keys.entries()) + encodeLines([...this.unsettled.values()]);
    // The old file is replaced whole below: a failed close of it loses nothing the new one holds.
    await this.fh?.close().catch(() => undefined);
    this.fh = undefined;
    try {
      await this.io.writeAtomic(this.file, text, { mode: 0o600, sync: false });
    } catch (err) {
      throw ioError('write', path.basename(this.file), err);
    }
    this.size = Buffer.byteLength(text);
  }
}
