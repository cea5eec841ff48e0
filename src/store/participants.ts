// One session's participants journal, participants/<name>.log: one user id per line, first-seen
// order. The set is loaded once and kept, so membership is O(1) however long the journal grows.
import type { FileHandle } from 'node:fs/promises';
import { AppendFile } from './append-file.js';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import { goDecodeUtf8, goTrimSpace } from './go-text.js';
import { scanLines } from './line-scan.js';
import type { Durability } from './state-store.js';
import { ioError, StoreError } from './store-error.js';
import type { StoreLog } from './store-log.js';
import type { WriteAheadLog } from './wal.js';

/** bufio.Scanner's default token limit: Go's ReadParticipants stops at a longer line. */
const GO_SCAN_MAX_LINE = 64 * 1024 - 1;
export const MAX_USER_ID_CHARS = 256;

/**
 * Go's ReadParticipants, streamed (scanLines): trimmed ids in first-seen order, blanks and
 * repeats skipped, stopping at a line longer than Go's scanner takes. Only `\n`-terminated lines
 * count: an unterminated tail is a write never acknowledged, dropped before the next append.
 */
export async function readJournal(io: Io, fh: FileHandle): Promise<Set<string>> {
  const seen = new Set<string>();
  await scanLines(
    io,
    fh,
    await io.size(fh),
    (line) => {
      if (line.length > GO_SCAN_MAX_LINE) return false;
      const id = goTrimSpace(goDecodeUtf8(line));
      if (id !== '') seen.add(id);
    },
    { unterminated: false },
  );
  return seen;
}

/**
 * Normalises an id before it is appended. Unlike Go, the id is trimmed (Go stores " u1 " and
 * then treats "u1" as present), and one that would not read back as itself is refused.
 */
export function normaliseUserId(raw: string): string {
  const id = goTrimSpace(raw).toWellFormed();
  const bad =
    id === '' ? 'must not be empty or blank'
    : /[\r\n]/.test(id) ? 'must not contain CR or LF'
    : [...id].length > MAX_USER_ID_CHARS ? `must be at most ${MAX_USER_ID_CHARS} characters`
    : undefined;
  if (bad) throw new StoreError('invalid-input', `userId ${bad}`);
  return id;
}

/** What a Participants journal is made of (Store.newJournal builds one per name). */
export interface ParticipantsOptions {
  io: Io;
  /** The journal, absolute, and its name relative to the state dir (for messages and the log). */
  file: string;
  rel: string;
  durability: Durability;
  log: StoreLog;
  /** Told each new id once it is in the file (the change feed). */
  onAdd?: (userId: string) => void;
  /** The write-ahead log its appends go through (durability `sync`), if any. */
  wal?: WriteAheadLog | undefined;
}

export class Participants {
  private readonly appender: AppendFile;
  private ids: Set<string> | undefined;
  /** Ids whose append is in flight: a concurrent duplicate waits for it to be durable. */
  private readonly claimed = new Map<string, Promise<void>>();
  private loading: Promise<Set<string>> | undefined;
  /** The last removal called and not yet done: appends and removals called after it wait for it. */
  private removing: Promise<boolean> | undefined;
  /** Bumped by remove(), so a read that began before a removal cannot restore the old ids. */
  private generation = 0;

  readonly file: string;
  readonly rel: string;
  private readonly io: Io;
  private readonly onAdd: (userId: string) => void;

  constructor(o: ParticipantsOptions) {
    const { io, file, rel, durability, log, wal } = o;
    this.io = io;
    this.file = file;
    this.rel = rel;
    this.onAdd = o.onAdd ?? (() => undefined);
    // A last id without its "\n" is a write that was never acknowledged (a crash mid-append):
    // it is not a participant, so it is dropped (Go's reader would return the fragment).
    this.appender = new AppendFile(io, file, rel, durability, { tornTail: () => 'drop', wal, log });
  }

  /**
   * Appends `userId` unless present; `added` says whether it was new. Idempotent under
   * concurrency: a duplicate of an id whose append is in flight is answered once that append is
   * durable (false), or, when it failed, tries the append itself.
   */
  append(userId: string): Promise<boolean> {
    let id: string;
    try {
      id = normaliseUserId(userId);
    } catch (err) {
      return Promise.reject(err);
    }
    // Behind a removal called before it: the ids it would check are the ones being deleted, and an
    // append of the same id still in flight would answer it "already there" from a journal about
    // to be gone. Appends waiting on one removal resume in call order.
    if (this.removing) {
      const run = (): Promise<boolean> => this.appendNow(id);
      return this.removing.then(run, run);
    }
    return this.appendNow(id);
  }

  private async appendNow(id: string): Promise<boolean> {
    for (;;) {
      // Loaded: no await before the append is queued, so calls keep their order in the queue
      // (a remove() called next is queued behind it, not before).
      const ids = this.ids ?? (await this.load());
      if (ids.has(id)) return false;
      const inFlight = this.claimed.get(id);
      if (inFlight) {
        // Its failure is its own caller's answer; here it only means "not added yet: try again".
        if (await inFlight.then(() => true, () => false)) return false;
        continue;
      }
      const write = this.appender.append(Buffer.from(`${id}\n`), undefined);
      this.claimed.set(id, write);
      try {
        await write;
        (this.ids ?? ids).add(id);
        this.onAdd(id);
      } finally {
        this.claimed.delete(id);
      }
      return true;
    }
  }

  /** Ids in first-seen order, as they are in the file. */
  async read(): Promise<string[]> {
    return [...(await this.load())];
  }

  /**
   * Deletes the journal after every append made before this call; `removed` says whether there
   * was one. An append made while the journal was loading is queued once the load is done, so
   * the removal waits for that load too, or it would overtake that append.
   */
  remove(after?: Promise<unknown>): Promise<boolean> {
    const run = (): Promise<boolean> => this.removeNow(after);
    const before = this.removing ?? this.loading;
    const removal = before ? before.then(run, run) : run();
    this.removing = removal;
    const done = (): void => {
      if (this.removing === removal) this.removing = undefined;
    };
    removal.then(done, done);
    return removal;
  }

  /** With `after`, its place in the queue is kept but nothing is removed unless `after` resolves. */
  private removeNow(after?: Promise<unknown>): Promise<boolean> {
    return this.appender.exclusive(async () => {
      if (after && !(await after.then(() => true, () => false))) return false;
      this.generation++;
      this.ids = new Set();
      this.loading = undefined;
      try {
        await this.io.unlink(this.file);
        return true;
      } catch (err) {
        if (isErrno(err, 'ENOENT')) return false;
        this.ids = undefined; // unknown now: reload from the file next time
        throw ioError('remove', this.rel, err);
      }
    });
  }

  settled(): Promise<void> {
    return this.appender.settled();
  }

  close(): Promise<void> {
    return this.appender.close();
  }

  private load(): Promise<Set<string>> {
    if (this.ids) return Promise.resolve(this.ids);
    this.loading ??= (async () => {
      const generation = this.generation;
      let ids = new Set<string>();
      let fh: FileHandle | undefined;
      try {
        fh = await this.io.open(this.file, 'r');
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw ioError('read', this.rel, err); // no journal: no participants (as Go)
      }
      if (fh) {
        try {
          ids = await readJournal(this.io, fh);
        } catch (err) {
          throw ioError('read', this.rel, err);
        } finally {
          await fh.close();
        }
      }
      if (generation === this.generation) this.ids = ids;
      return ids;
    })().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }
}
