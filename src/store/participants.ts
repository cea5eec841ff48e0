// One session's participants journal, participants/<name>.log: one user id per line, first-seen
// order. The set is loaded once and kept, so membership is O(1) however long the journal grows.
import type { FileHandle } from 'node:fs/promises';
import type { AppendState } from './append-file-options.js';
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

/** What a Participants journal is made of (SessionFiles builds one per name: session-files.ts). */
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
  /**
   * Per id, its appends in flight, in call order: each one after the first leaves its bytes out
   * when one before it is written (or goes into the same write).
   */
  private readonly claimed = new Map<string, AppendState[]>();
  private loading: Promise<Set<string>> | undefined;
  /** The last removal called and not yet done: appends and removals called after it wait for it. */
  private removing: Promise<boolean> | undefined;
  /** Appends waiting on a removal, until each has its place in the file's queue: a removal called after them waits for that too. */
  private deferred: Promise<unknown> | undefined;
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
   * concurrency: a duplicate of an id whose append is in flight takes its own place in the file's
   * queue at once and, when its turn comes, leaves its bytes out if that append is written
   * (answered false once it is durable) or writes the id itself if that append failed. (It once
   * waited for that append's answer and only then queued, behind the calls made meanwhile: u1
   * refused, u1, u2 left u2, u1; and u1 refused, u1, session/remove with purge left u1 in the
   * journal the purge had removed.)
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
      // A removal called after this one waits until it has its place in the file's queue (it
      // may load the journal first): both waited on the same removal, and the later one, queued
      // while this append still loaded, overtook it (removed:false, the id left in the journal).
      let placed!: () => void;
      const queued = new Promise<void>((resolve) => (placed = resolve));
      const deferred = Promise.all([this.deferred, queued]);
      this.deferred = deferred;
      void deferred.then(() => {
        if (this.deferred === deferred) this.deferred = undefined;
      });
      const run = (): Promise<boolean> => this.appendNow(id, placed);
      return this.removing.then(run, run);
    }
    return this.appendNow(id);
  }

  /** `placed` is called once the append has its place in the file's queue, or needs none. */
  private async appendNow(id: string, placed: () => void = () => undefined): Promise<boolean> {
    let ids: Set<string>;
    try {
      // Loaded: no await before the append is queued, so calls keep their order in the queue
      // (a remove() called next is queued behind it, not before).
      ids = this.ids ?? (await this.load());
    } catch (err) {
      placed(); // a failed load queues nothing to wait for
      throw err;
    }
    if (ids.has(id)) {
      placed();
      return false;
    }
    const before = this.claimed.get(id) ?? [];
    const skip = before.length === 0 ? undefined : (included: ReadonlySet<AppendState>): boolean => before.some((a) => a.written || included.has(a));
    const { state, done } = this.appender.appendJob(Buffer.from(`${id}\n`), undefined, skip);
    placed();
    const mine = [...before, state];
    this.claimed.set(id, mine);
    try {
      await done;
      if (state.skipped) return false;
      (this.ids ?? ids).add(id);
      this.onAdd(id);
      return true;
    } finally {
      if (this.claimed.get(id) === mine) this.claimed.delete(id);
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
    // allSettled: a removal that fails must not let this one start before the appends deferred behind it are queued.
    const before = this.deferred ? Promise.allSettled([this.removing ?? this.loading, this.deferred]) : this.removing ?? this.loading;
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
      // The appends before it are done; an append after it never leaves its id out for them.
      this.claimed.clear();
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
