// Idempotency keys of transcript appends (writer-sequences.ts says what a key is): an append sent
// again with the key of one already in the file is answered with that one's seq, never written
// twice, also after kill -9 of the server.
//
// Durable with the write: before a batch's bytes are written, one line per keyed append goes to
// `<side>/append-keys.log` (append-keys-log.ts) saying where its bytes go (file, inode, offset,
// length, crc32). A crash between that line and the write leaves a line whose bytes are not in the
// file: the next start checks each line against the file (after the write-ahead log's replay) and
// keeps only the keys whose bytes are there, then writes the log again with those alone. The line
// is written with write(2) and not synced: a kill -9 keeps it (the page cache), as it keeps the
// append itself. In `sync` mode the key is also in the append's write-ahead record (wal-record.ts,
// `k`), whose fdatasync makes the append durable: a replay hands the keys of the records it kept
// to keepReplayedKeys, which writes them down (synced) before the log is emptied, and a checkpoint
// syncs this log before it empties the write-ahead log. So no append costs a second fdatasync for
// its key.
//
// A compaction replaces the file the places name: before its rename, the keys whose bytes are in
// the old file are written again without a place (carry), so the next start still finds them.
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import type { AppendPlace, Line } from './append-keys-log.js';
import { decodeKeyLine, encodeAppendKeys, encodeLines, landed, nameOf, openLog } from './append-keys-log.js';
import { NewerFormatError } from './sealed-line.js';
import type { Io } from './io.js';
import { ioError } from './store-error.js';
import type { KeyedAnswer, WriterKey } from './writer-sequences.js';
import { KeyTable } from './writer-sequences.js';

/** Past this size the log is written again with the keys kept alone. */
const REWRITE_BYTES = 1 << 20;

export class AppendKeys {
  readonly keys = new KeyTable();
  /** Lines noted whose appends are not answered yet: a rewrite keeps them, with their places. */
  private readonly unsettled = new Map<string, Line>();
  /** Lines in the log with a place whose bytes are in their file (per file): what a compaction carries. */
  private readonly placed = new Map<string, Map<string, Line>>();
  private fh: FileHandle | undefined;
  /** The log's name was made since the folder was last synced (sync mode syncs it with the log). */
  private created = false;
  private size = 0;
  private chain: Promise<void> = Promise.resolve();

  private constructor(
    private readonly io: Io,
    private readonly dir: string,
    private readonly file: string,
    /** The store's durability is `sync`. */
    private readonly durable: boolean,
  ) {}

  /**
   * Reads the log, keeps the keys whose bytes are in their files, and writes it again with those.
   * `sync`: the store's durability is `sync`. `fresh`: its folder was just made (no log to read).
   */
  static async load(io: Io, dir: string, file: string, { sync = false, fresh = false }: { sync?: boolean; fresh?: boolean } = {}): Promise<AppendKeys> {
    const k = new AppendKeys(io, dir, file, sync);
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
      if (line.p === undefined || (await landed(io, dir, line.p))) kept.push({ key: { id: line.w, seq: line.q }, answer: line.a });
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
    for (const row of rows) this.unsettled.set(nameOf(row), row);
    return this.appendLines(rows, false);
  }

  /** The keyed appends of a batch (noted before) are in their file: a compaction of it carries them. */
  wrote(keys: readonly WriterKey[]): void {
    for (const key of keys) {
      const line = this.unsettled.get(`${key.id}\u0000${key.seq}`);
      if (line?.p === undefined) continue;
      const inFile = this.placed.get(line.p.f) ?? new Map<string, Line>();
      inFile.set(nameOf(line), line);
      this.placed.set(line.p.f, inFile);
    }
  }

  /**
   * Before a compaction renames its new file over `rel` (inode `ino`): the keys whose bytes are
   * in the old file are written again without a place (synced in `sync` mode), since the check
   * at the next start could no longer find them at their places.
   */
  carry(rel: string, ino: number): Promise<void> {
    const inFile = this.placed.get(rel);
    const rows = [...(inFile?.values() ?? [])].filter((l) => l.p?.i === ino).map(({ w, q, a }): Line => ({ w, q, a }));
    if (rows.length === 0) return Promise.resolve();
    return this.appendLines(rows, this.durable).then(() => {
      for (const row of rows) inFile?.delete(nameOf(row));
      if (inFile?.size === 0) this.placed.delete(rel);
    });
  }

  /** Makes every line written so far durable (a checkpoint, before it empties the write-ahead log). */
  sync(): Promise<void> {
    const run = this.chain.then(async () => {
      try {
        if (this.fh) await this.io.datasync(this.fh);
        if (this.created) await this.io.syncDir(path.dirname(this.file));
        this.created = false;
      } catch (err) {
        throw ioError('sync', path.basename(this.file), err);
      }
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Appends `rows` in the log's order (after a rewrite when it has grown past its bound); `synced`: fdatasync'ed too. */
  private appendLines(rows: readonly Line[], synced: boolean): Promise<void> {
    const buf = Buffer.from(encodeLines(rows));
    const run = this.chain.then(async () => {
      if (this.size > REWRITE_BYTES) await this.rewrite();
      try {
        if (!this.fh) {
          const opened = await openLog(this.io, this.file);
          this.fh = opened.fh;
          this.created ||= opened.created;
        }
        if (synced) {
          await this.io.writeSynced(this.fh, buf);
          if (this.created) await this.io.syncDir(path.dirname(this.file));
          this.created = false;
        } else await this.io.write(this.fh, buf);
        this.size += buf.length;
      } catch (err) {
        throw ioError('write', path.basename(this.file), err);
      }
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** The append of `key` is answered (`answer`) or failed (undefined: its bytes were not written). */
  settled(key: WriterKey, answer?: unknown): void {
    const name = `${key.id}\u0000${key.seq}`;
    const line = this.unsettled.get(name);
    this.unsettled.delete(name);
    if (answer === undefined && line?.p) this.placed.get(line.p.f)?.delete(name);
    if (answer !== undefined) this.keys.remember([{ key, answer }]);
  }

  /** Closes the log. */
  async close(): Promise<void> {
    await this.chain;
    // A close reports no write of ours: every line was written (or failed its caller) already.
    await this.fh?.close().catch(() => undefined);
    this.fh = undefined;
  }


  /** Writes the log again with the keys kept (checked already), atomically (and synced in `sync` mode). */
  private async rewrite(): Promise<void> {
    const text = encodeAppendKeys(this.keys.entries()) + encodeLines([...this.unsettled.values()]);
    // The old file is replaced whole below: a failed close of it loses nothing the new one holds.
    await this.fh?.close().catch(() => undefined);
    this.fh = undefined;
    try {
      await this.io.writeAtomic(this.file, text, { mode: 0o600, sync: this.durable });
      if (this.durable) await this.io.syncDir(path.dirname(this.file));
    } catch (err) {
      throw ioError('write', path.basename(this.file), err);
    }
    this.created = false;
    this.size = Buffer.byteLength(text);
    // Only the appends under way keep their places: every other key is written without one.
    for (const [rel, inFile] of this.placed) {
      for (const name of inFile.keys()) if (!this.unsettled.has(name)) inFile.delete(name);
      if (inFile.size === 0) this.placed.delete(rel);
    }
  }
}
