// Idempotency keys of the state document's writes (a writer id and a seq per write, sent by a
// client that sends a write again when its connection ended without an answer): a write whose
// key was applied is answered as it was, never applied twice, also after a crash of the server.
//
// Durable with the write: the table is written (`<side>/writers.json`, replaced atomically)
// before the commit's rename of state.json, with the keys that commit applies kept apart (`last`)
// and the stamp state.json had before it (`before`). A crash between the two leaves state.json
// with that stamp: the load leaves `last` out (those writes are not in the file, so a retry
// applies them). Otherwise the rename happened (the file has another inode now, or was changed
// since) and `last` counts. A commit that failed after its keys were written marks the table
// dirty: the next commit writes it again first, so a later rename can never make them count.
import path from 'node:path';
import { parseExactJson, stringifyExactJson } from '../common/exact-json.js';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import { ioError } from './store-error.js';

/** The table's file in the state's side folder. */
export const WRITERS_FILE = 'writers.json';

export interface WriterKey {
  readonly id: string;
  readonly seq: number;
}

/** What tells one state.json from another (inode, size, mtime), null when there is none. */
export type FileStamp = { ino: number; size: number; mtimeMs: number } | null;

/** A key and the answer its write was given. */
export interface KeyedAnswer {
  readonly key: WriterKey;
  readonly answer: unknown;
}

/** Answers kept per writer: a client sends a write again right after its connection ended, not after this many newer ones. */
const WINDOW = 64;
/** Writers kept; the one unused longest goes first. */
const MAX_WRITERS = 256;

/** The file's content (version 1). */
export interface FileFormat {
  v: 1;
  before: FileStamp;
  table: [string, [number, unknown][]][];
  last: [string, number, unknown][];
}

/** A table's keys: per writer id (the one used longest ago first), its seqs and their answers. */
export type KeyEntries = [string, [number, unknown][]][];

/** The file, read: a table of writers, or why it is not one. */
export function decodeWriters(text: string): FileFormat | { problem: string } {
  let data: FileFormat;
  try {
    data = parseExactJson(text) as FileFormat;
  } catch (err) {
    return { problem: `not JSON (${(err as Error).message})` };
  }
  if (data?.v !== 1 || !Array.isArray(data.table) || !Array.isArray(data.last)) return { problem: 'not a table of writers (version 1)' };
  return data;
}

/**
 * The file for `table` with no commit under way (nothing in `last`, so no state.json stamp to
 * judge it by): what a backup holds, and a restore puts in the new side folder.
 */
export const encodeWriters = (table: KeyEntries): string => stringifyExactJson({ v: 1, before: null, table, last: [] } satisfies FileFormat);

const sameStamp = (a: FileStamp, b: FileStamp): boolean =>
  a === b || (a !== null && b !== null && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs);

const keyName = (k: WriterKey): string => `${k.id}\u0000${k.seq}`;

/**
 * Answers by key, in memory: per writer the last WINDOW answers, at most MAX_WRITERS writers (the
 * one unused longest dropped first), and the keyed writes accepted but not answered yet.
 */
export class KeyTable {
  /** writer → seq → answer; Map order is use order (the oldest first). */
  private readonly table = new Map<string, Map<number, unknown>>();
  /** Keyed writes accepted and not answered yet: a copy sent meanwhile waits for the first. */
  private readonly inflight = new Map<string, Promise<unknown>>();

  /** The answer of a write with this key already applied, or undefined. */
  answered(key: WriterKey): { answer: unknown } | undefined {
    const answers = this.table.get(key.id);
    return answers?.has(key.seq) ? { answer: answers.get(key.seq) } : undefined;
  }

  /** The write with this key accepted and not yet answered, if any. */
  pending(key: WriterKey): Promise<unknown> | undefined {
    return this.inflight.get(keyName(key));
  }

  /** Holds `write` as the one with `key` until it settles. */
  track<T>(key: WriterKey, write: Promise<T>): Promise<T> {
    const name = keyName(key);
    this.inflight.set(name, write);
    const done = (): void => {
      if (this.inflight.get(name) === write) this.inflight.delete(name);
    };
    write.then(done, done);
    return write;
  }

  /** Every answer kept, writer by writer (the oldest first). */
  entries(): KeyEntries {
    return [...this.table].map(([id, answers]) => [id, [...answers]]);
  }

  remember(answered: readonly KeyedAnswer[]): void {
    for (const { key, answer } of answered) {
      const answers = this.table.get(key.id) ?? new Map<number, unknown>();
      this.table.delete(key.id); // to the end: the most recently used
      answers.set(key.seq, answer);
      for (const seq of answers.keys()) {
        if (answers.size <= WINDOW) break;
        answers.delete(seq);
      }
      this.table.set(key.id, answers);
    }
    for (const id of this.table.keys()) {
      if (this.table.size <= MAX_WRITERS) break;
      this.table.delete(id);
    }
  }
}

export class WriterSequences {
  readonly keys = new KeyTable();
  /** A commit failed after its keys were written: the next commit writes the table first. */
  private dirty = false;

  private constructor(
    private readonly io: Io,
    private readonly file: string,
    private readonly sync: boolean,
  ) {}

  /** Reads the table; `current` is state.json's stamp as the store just read it. `fresh`: its folder was just made (no table to read). */
  static async load(io: Io, file: string, current: FileStamp, sync: boolean, fresh = false): Promise<WriterSequences> {
    const w = new WriterSequences(io, file, sync);
    if (fresh) return w;
    let text: string;
    try {
      text = (await io.readFile(file)).toString('utf8');
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return w;
      throw ioError('read', path.basename(file), err);
    }
    const data = decodeWriters(text);
    // Written atomically, so only a foreign file: keys are lost, never invented (a retry applies again).
    if ('problem' in data) return w;
    w.keys.remember(data.table.flatMap(([id, answers]) => answers.map(([seq, answer]) => ({ key: { id, seq }, answer }))));
    if (data.last.length > 0) {
      if (sameStamp(data.before, current)) w.dirty = true; // the rename never happened
      else w.keys.remember(data.last.map(([id, seq, answer]) => ({ key: { id, seq }, answer })));
    }
    return w;
  }

  /** Whether the next commit must write the table first (even with no keys of its own). */
  get needsWrite(): boolean {
    return this.dirty;
  }

  /**
   * Writes the table with `last` (the keys the commit about to replace state.json applies) before
   * that commit's rename; `before` is state.json's stamp now.
   */
  async prepare(last: readonly KeyedAnswer[], before: FileStamp): Promise<void> {
    const data: FileFormat = { v: 1, before, table: this.keys.entries(), last: last.map(({ key, answer }) => [key.id, key.seq, answer]) };
    this.dirty = last.length > 0; // until the commit says it is in the file
    try {
      await this.io.writeAtomic(this.file, stringifyExactJson(data), { mode: 0o600, sync: this.sync });
      if (this.sync) await this.io.syncDir(path.dirname(this.file));
    } catch (err) {
      this.dirty = true;
      throw ioError('write', path.basename(this.file), err);
    }
  }

  /** The commit whose keys `prepare` wrote is in the file: they are answered from now on. */
  committed(last: readonly KeyedAnswer[]): void {
    this.dirty = false;
    this.keys.remember(last);
  }
}
