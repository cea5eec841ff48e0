// Idempotency keys (a writer id and a seq per write, sent by a client that sends a write again
// when its connection ended without an answer): a write whose key was applied is answered as it
// was, never applied twice, also after a crash of the server. What a key is and the table of
// answers kept in memory; how they are made durable with their writes: state-keys.ts (the state
// document's writes) and append-keys.ts (transcript appends). Also the previous format of the
// document's keys, `<side>/writers.json`, which a start reads once and folds into state-keys.log.
import { parseExactJson } from '../common/exact-json.js';

/** The previous format's file in the state's side folder (read, never written). */
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

/** writers.json's content (version 1): the table, and the keys of the commit under way (`last`) with state.json's stamp before it. */
export interface FileFormat {
  v: 1;
  before: FileStamp;
  table: [string, [number, unknown][]][];
  last: [string, number, unknown][];
}

/** A table's keys: per writer id (the one used longest ago first), its seqs and their answers. */
export type KeyEntries = [string, [number, unknown][]][];

/** writers.json, read: a table of writers, or why it is not one. */
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

/** Whether two stamps name the same version of a file. */
export const sameStamp = (a: FileStamp, b: FileStamp): boolean =>
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
