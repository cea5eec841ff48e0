// One session's participants journal, participants/<name>.log: one user id per line, first-seen
// order. The set is loaded once and kept, so membership is O(1) however long the journal grows.
import { AppendFile } from './append-file.js';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import { goTrimSpace } from './go-text.js';
import type { Durability } from './state-store.js';
import { ioError, StoreError } from './store-error.js';
import type { StoreLog } from './store-log.js';
import type { WriteAheadLog } from './wal.js';

/** bufio.Scanner's default token limit: Go's ReadParticipants stops at a longer line. */
const GO_SCAN_MAX_LINE = 64 * 1024 - 1;
export const MAX_USER_ID_CHARS = 256;

/** Go's ReadParticipants over a journal's bytes: trimmed, blanks and repeats skipped. */
export function parseJournal(buf: Buffer): string[] {
  const seen = new Set<string>();
  let start = 0;
  while (start < buf.length) {
    let end = buf.indexOf(0x0a, start);
    if (end < 0) end = buf.length;
    if (end - start > GO_SCAN_MAX_LINE) break;
    const id = goTrimSpace(buf.toString('utf8', start, end));
    if (id !== '') seen.add(id);
    start = end + 1;
  }
  return [...seen];
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

export class Participants {
  private readonly appender: AppendFile;
  private ids: Set<string> | undefined;
  /** Ids whose append is in flight: a concurrent duplicate waits for it to be durable. */
  private readonly claimed = new Map<string, Promise<void>>();
  private loading: Promise<Set<string>> | undefined;
  /** Bumped by remove(), so a read that began before a removal cannot restore the old ids. */
  private generation = 0;

  constructor(
    private readonly io: Io,
    readonly file: string,
    readonly rel: string,
    durability: Durability,
    log: StoreLog,
    private readonly onAdd: (userId: string) => void = () => undefined,
    wal?: WriteAheadLog,
  ) {
    // A last id without its "\n" is a write that was never acknowledged (a crash mid-append):
    // it is not a participant, so it is dropped (Go's reader would return the fragment).
    this.appender = new AppendFile(io, file, rel, durability, { tornTail: () => 'drop', wal, log });
  }

  /**
   * Appends `userId` unless present; `added` says whether it was new. Idempotent under
   * concurrency: a duplicate of an id whose append is in flight is answered once that append is
   * durable (false), or, when it failed, tries the append itself.
   */
  async append(userId: string): Promise<boolean> {
    const id = normaliseUserId(userId);
    for (;;) {
      const ids = await this.load();
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

  /** Deletes the journal after queued appends; `removed` says whether there was one. */
  remove(): Promise<boolean> {
    return this.appender.exclusive(async () => {
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
      let buf: Buffer = Buffer.alloc(0);
      try {
        buf = await this.io.readFile(this.file);
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw ioError('read', this.rel, err);
      }
      // Only terminated lines: an unterminated tail is dropped before the next append.
      const ids = new Set(parseJournal(buf.subarray(0, buf.lastIndexOf(0x0a) + 1)));
      if (generation === this.generation) this.ids = ids;
      return ids;
    })().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }
}
