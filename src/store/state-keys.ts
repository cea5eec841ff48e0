// The log of the state document's idempotency keys (writer-sequences.ts says what a key is): a
// write whose key was applied is answered as it was, never applied twice, also after a crash.
//
// Durable with the write: before a commit's rename of state.json, one sealed line (sealed-line.ts)
// per keyed write it applies is appended to `<side>/state-keys.log` (fdatasync'ed in `sync` mode,
// before state.json's own replace), with the commit's number `c` and the stamp `b` state.json had
// before it. At a start only the last commit's lines are in doubt: a crash between them and the
// rename leaves state.json with that stamp, so they are left out (those writes are not in the
// file, and their retry applies them); any other stamp means the rename happened (or the file
// changed since) and they count. Lines of earlier commits count: a commit that failed after its
// lines were written makes the next commit write the log again (its table alone) first, so a
// later rename can never make them count. A line without `c` is the table as a rewrite (a start
// that leaves lines out, past COMPACT_BYTES, after a failure), a backup or a restore wrote it: it counts.
//
// The previous format, `<side>/writers.json` (one exact-JSON table replaced whole before each
// keyed commit), is read at a start and folded into the log, then removed.
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import type { Io } from './io.js';
import { NewerFormatError, sealLine, unsealLine } from './sealed-line.js';
import { ioError } from './store-error.js';
import type { FileStamp, KeyedAnswer, KeyEntries } from './writer-sequences.js';
import { decodeWriters, KeyTable, sameStamp, WRITERS_FILE } from './writer-sequences.js';

/** The log's file in the state's side folder. */
export const STATE_KEYS_FILE = 'state-keys.log';

/** Past this size the next keyed commit writes the log again with the table alone. */
const COMPACT_BYTES = 256 * 1024;

/** One line: a key and its answer; with `c` and `b` when a commit wrote it (see above). */
interface Line {
  w: string;
  q: number;
  a: unknown;
  c?: number;
  b?: FileStamp;
}

const isStamp = (b: unknown): boolean => b === null
  || (typeof b === 'object' && typeof (b as { ino?: unknown }).ino === 'number' && typeof (b as { size?: unknown }).size === 'number'
    && typeof (b as { mtimeMs?: unknown }).mtimeMs === 'number');

/** One line of the log, read: a key, a line of a newer format than this build reads, or a damaged line. */
export function decodeStateKeyLine(raw: string): { line: Line } | { newer: number } | { damaged: string } {
  const got = unsealLine(raw);
  if ('newer' in got) return { newer: got.newer };
  if ('damaged' in got) return { damaged: 'its checksum does not match (a torn last line is one)' };
  const line = got.value as Line;
  if (typeof line?.w !== 'string' || typeof line.q !== 'number') return { damaged: 'not a key (no writer id and seq)' };
  if (line.c !== undefined && (typeof line.c !== 'number' || !isStamp(line.b))) return { damaged: 'a commit\'s key without its number and stamp' };
  return { line };
}

const encodeLines = (lines: readonly Line[]): string => lines.map((l) => sealLine(JSON.stringify(l))).join('');

/** The log for the keys `table`, no commit under way: what a rewrite, a backup and a restore write. */
export const encodeStateKeys = (table: KeyEntries): string =>
  encodeLines(table.flatMap(([w, answers]) => answers.map(([q, a]): Line => ({ w, q, a }))));

export class StateKeys {
  readonly keys = new KeyTable();
  private fh: FileHandle | undefined;
  private size = 0;
  /** The number of the last commit that wrote lines. */
  private commits = 0;
  /** Lines of a commit not known to be in state.json may be in the log: the next commit writes it again first. */
  private dirty = false;

  private constructor(
    private readonly io: Io,
    private readonly file: string,
    private readonly sync: boolean,
  ) {}

  /**
   * Reads the log (and a table of the previous format), judging the last commit's lines by
   * `current`, state.json's stamp as the store just read it; then writes the log again with the
   * keys that count and removes the previous format's file. `fresh`: the side folder was just made.
   */
  static async load(io: Io, side: string, current: FileStamp, sync: boolean, fresh = false): Promise<StateKeys> {
    const k = new StateKeys(io, path.join(side, STATE_KEYS_FILE), sync);
    if (fresh) return k;
    const legacyFile = path.join(side, WRITERS_FILE);
    const legacy = await readIfThere(io, legacyFile);
    if (legacy !== undefined) {
      const data = decodeWriters(legacy);
      // Written atomically, so only a foreign file: keys are lost, never invented (a retry applies again).
      if (!('problem' in data)) {
        k.keys.remember(data.table.flatMap(([id, answers]) => answers.map(([seq, answer]) => ({ key: { id, seq }, answer }))));
        if (!sameStamp(data.before, current)) k.keys.remember(data.last.map(([id, seq, answer]) => ({ key: { id, seq }, answer })));
      }
    }
    const text = await readIfThere(io, k.file) ?? '';
    const lines: Line[] = [];
    let last = 0;
    let damaged = false;
    for (const raw of text.split('\n')) {
      if (raw === '') continue;
      const got = decodeStateKeyLine(raw);
      if ('newer' in got) throw new NewerFormatError(STATE_KEYS_FILE, got.newer);
      if ('damaged' in got) {
        damaged = true; // a torn last line: its commit never renamed state.json
        continue;
      }
      lines.push(got.line);
      last = Math.max(last, got.line.c ?? 0);
    }
    const counts = (l: Line): boolean => l.c === undefined || l.c < last || !sameStamp(l.b ?? null, current);
    const kept = lines.filter(counts);
    k.keys.remember(kept.map((l) => ({ key: { id: l.w, seq: l.q }, answer: l.a })));
    // Written again only when it holds what must not count later (a commit that never landed, a
    // damaged or torn line an append would follow) or the previous format is folded in; else the
    // next commit's number follows the last one's.
    if (kept.length < lines.length || damaged || legacy !== undefined) await k.rewrite();
    else {
      k.commits = last;
      k.size = Buffer.byteLength(text);
    }
    if (legacy !== undefined) {
      // After the log holds its keys: a crash before this removal reads both again, the same way
      // (no commit ran since, so state.json's stamp still judges the old table as it did now).
      try {
        await io.unlink(legacyFile);
        if (sync) await io.syncDir(side);
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw ioError('remove', WRITERS_FILE, err);
      }
    }
    return k;
  }

  /** Whether the next commit must write the log first (even with no keys of its own). */
  get needsWrite(): boolean {
    return this.dirty;
  }

  /**
   * Appends the keys `last` the commit about to replace state.json applies (its stamp now:
   * `before`), after writing the log again when a commit before failed or it grew past its bound.
   */
  async prepare(last: readonly KeyedAnswer[], before: FileStamp): Promise<void> {
    if (this.dirty || this.size > COMPACT_BYTES) await this.rewrite();
    if (last.length === 0) return;
    const c = ++this.commits;
    const buf = Buffer.from(encodeLines(last.map(({ key, answer }): Line => ({ w: key.id, q: key.seq, a: answer, c, b: before }))));
    this.dirty = true; // until the commit says it is in the file
    try {
      const fh = this.fh ?? await this.openLog();
      if (this.sync) await this.io.writeSynced(fh, buf);
      else await this.io.write(fh, buf);
      this.size += buf.length;
    } catch (err) {
      await this.dropHandle();
      throw ioError('write', STATE_KEYS_FILE, err);
    }
  }

  /** The commit whose keys `prepare` wrote is in the file: they are answered from now on. */
  committed(last: readonly KeyedAnswer[]): void {
    this.dirty = false;
    this.keys.remember(last);
  }

  /** Closes the log (every line was written, or failed its commit, already). */
  close(): Promise<void> {
    return this.dropHandle();
  }

  private async openLog(): Promise<FileHandle> {
    let fh: FileHandle;
    try {
      fh = await this.io.open(this.file, 'ax', 0o600);
    } catch (err) {
      if (!isErrno(err, 'EEXIST')) throw err;
      this.fh = await this.io.open(this.file, 'a', 0o600);
      return this.fh;
    }
    this.fh = fh;
    // A new name in the side folder: durable before a line in it is counted on.
    if (this.sync) await this.io.syncDir(path.dirname(this.file));
    return fh;
  }

  private async dropHandle(): Promise<void> {
    const fh = this.fh;
    this.fh = undefined;
    await fh?.close().catch(() => undefined); // every line through it was answered (or failed its commit) already
  }

  /** Writes the log again with the table alone, atomically; a failure leaves it to the next commit. */
  private async rewrite(): Promise<void> {
    await this.dropHandle();
    const text = encodeStateKeys(this.keys.entries());
    this.dirty = true;
    try {
      await this.io.writeAtomic(this.file, text, { mode: 0o600, sync: this.sync });
      if (this.sync) await this.io.syncDir(path.dirname(this.file));
    } catch (err) {
      throw ioError('write', STATE_KEYS_FILE, err);
    }
    this.dirty = false;
    this.size = Buffer.byteLength(text);
    this.commits = 0;
  }
}

async function readIfThere(io: Io, file: string): Promise<string | undefined> {
  try {
    return (await io.readFile(file)).toString('utf8');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw ioError('read', path.basename(file), err);
  }
}
