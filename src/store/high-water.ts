// The durable high-water mark of transcript seq numbers: for every name, a seq at or above the
// next one it will hand out, kept in .herrscher-state/high-water.json (outside Go's layout). It is
// the last line of defence for "seq never goes back": when every copy of a transcript's side file
// is gone or damaged, the file's entries are numbered so that the next seq is at least this mark.
//
// It is written with every checkpoint of the write-ahead log (before the log is emptied), with
// every compaction and removal, and at close; the log's records carry the seq after them, so a
// replay raises the mark past every append acknowledged since the last write of this file.
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import { NewerFormatError, sealLine, unsealLine } from './sealed-line.js';
import { ioError } from './store-error.js';
import type { StoreLog } from './store-log.js';

/** The marks of `state.json`; another state file's are in its own side folder (paths.ts, sideOf). */
export const HIGH_WATER_REL = '.herrscher-state/high-water.json';
export const highWaterRelIn = (side: string): string => `${side}/high-water.json`;

export class HighWater {
  private dirty = false;
  /** Saves run one after another: a save returns once every raise before it is on disk. */
  private saving: Promise<void> = Promise.resolve();

  private constructor(
    private readonly io: Io,
    private readonly rel: string,
    private readonly file: string,
    private readonly marks: Map<string, number>,
  ) {}

  /**
   * Reads the marks; a missing file has none, a damaged one is logged at error and read as none,
   * one of a newer format stops the start (NewerFormatError).
   */
  static async load(io: Io, dir: string, log: StoreLog, rel = HIGH_WATER_REL): Promise<HighWater> {
    const file = path.join(dir, rel);
    const marks = new Map<string, number>();
    let text: string | undefined;
    try {
      text = (await io.readFile(file)).toString('utf8');
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw ioError('read', rel, err);
    }
    if (text !== undefined) {
      const parsed = parse(text, rel);
      if (parsed) for (const [k, v] of Object.entries(parsed)) marks.set(k, v);
      else log.error(`${rel} is damaged (checksum or syntax); the seq high-water marks it held are lost, the transcripts' side files still number them`);
    }
    return new HighWater(io, rel, file, marks);
  }

  /** No marks yet, for the side folder an open just made (nothing to read). */
  static none(io: Io, dir: string, rel = HIGH_WATER_REL): HighWater {
    return new HighWater(io, rel, path.join(dir, rel), new Map());
  }

  /** The mark for `name` (0 when none). */
  get(name: string): number {
    return this.marks.get(name) ?? 0;
  }

  /** Every mark, by name. */
  entries(): IterableIterator<[string, number]> {
    return this.marks.entries();
  }

  /** Raises the mark of `name` to `next` (never lowers it); written by the next save(). */
  raise(name: string, next: number): void {
    if (next > (this.marks.get(name) ?? 0)) {
      this.marks.set(name, next);
      this.dirty = true;
    }
  }

  /** Forgets `name` (its transcript was removed: seq starts again at 0). */
  reset(name: string): void {
    if (this.marks.delete(name)) this.dirty = true;
  }

  /** Writes the marks (atomically, synced) when they changed; resolves once they are on disk. */
  save(): Promise<void> {
    const run = this.saving.then(() => this.write());
    this.saving = run.then(() => undefined, () => undefined); // the failure is this caller's: `run` rejects with it
    return run;
  }

  private async write(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    const json = JSON.stringify(Object.fromEntries(this.marks));
    try {
      await this.io.mkdir(path.dirname(this.file), 0o700);
      await this.io.writeAtomic(this.file, sealLine(json), { mode: 0o600, sync: true });
      // The rename too must survive a power loss: an old marks file after a checkpoint emptied
      // the log would let a seq go back.
      await this.io.syncDir(path.dirname(this.file));
    } catch (err) {
      this.dirty = true;
      throw ioError('write', this.rel, err);
    }
  }
}

/** The marks a file's text holds (a sealed line: sealed-line.ts), or undefined when it is damaged. */
function parse(text: string, rel: string): Record<string, number> | undefined {
  const got = unsealLine(text.trimEnd());
  if ('newer' in got) throw new NewerFormatError(rel, got.newer);
  if ('damaged' in got) return undefined;
  const v = got.value;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(v)) if (Number.isSafeInteger(n) && (n as number) >= 0) out[k] = n as number;
  return out;
}
