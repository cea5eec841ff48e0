// The raw ceilings on the bench's own disk, in-process and with the calls our store uses
// (node:fs/promises FileHandles on libuv's thread pool): what an append or a state.json rewrite
// could cost with no RPC and no server at all, and SQLite as a user would run it (in a python3
// child). Every file lives in the bench's temp dir, on the same file system as the server's state dir.
import { execFile } from 'node:child_process';
import type { FileHandle } from 'node:fs/promises';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Bounds } from './config.js';
import { SQLITE_CEILING } from './config.js';
import type { Latency, Rate } from './load.js';
import { awaitEach, eachAwaiting } from './load.js';
import { nowUs } from './stats.js';

const execFileAsync = promisify(execFile);

/** The line our server appends for the bench's entry, so byte counts match. */
export const LINE = Buffer.from(
  '{"ts":"2026-07-26T00:00:05Z","role":"assistant","text":"Done: the failing test now passes; I also removed the unused import it complained about.","cost":0.004,"tokens_in":30,"tokens_out":55,"dur_ms":4200}\n',
);

/**
 * write(2) + fdatasync of one line, one caller awaiting each: back to back, the durable append
 * floor; with `before` (a bare echo round trip), what a server with no cost of its own would
 * answer, since an fdatasync after an idle gap is slower than one back to back.
 */
export async function fdatasyncLatency(dir: string, b: Bounds, before?: () => Promise<unknown>): Promise<Latency> {
  const fh = await fs.open(path.join(dir, 'fdatasync.log'), 'a');
  try {
    return await awaitEach(async () => {
      await before?.();
      await fh.write(LINE);
      await fh.datasync();
    }, b);
  } finally {
    await fh.close();
  }
}

/**
 * A minimal group commit: lines that arrive while a write+fdatasync runs form the next batch
 * (one write, one fdatasync), every caller answered after it. The store's AppendFile does the
 * same per file; this is that idea without RPC, JSON or bookkeeping.
 */
class GroupCommitFile {
  private waiting: { resolve(): void; reject(err: unknown): void }[] = [];
  private lines: Buffer[] = [];
  private running = false;

  constructor(private readonly fh: FileHandle, private readonly sync: boolean) {}

  append(line: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      this.lines.push(line);
      this.waiting.push({ resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    while (this.lines.length > 0) {
      const lines = this.lines;
      const waiting = this.waiting;
      this.lines = [];
      this.waiting = [];
      try {
        await this.fh.write(lines.length === 1 ? (lines[0] as Buffer) : Buffer.concat(lines));
        if (this.sync) await this.fh.datasync();
        for (const w of waiting) w.resolve();
      } catch (err) {
        for (const w of waiting) w.reject(err);
      }
    }
    this.running = false;
  }
}

/**
 * `writers` callers, each awaiting its own appends, group-committed into one shared file
 * (`files: 'shared'`: what a write-ahead log would reach) or into one file per writer (`'own'`:
 * what per-session transcripts can reach, bound by concurrent fdatasyncs). `sync: false` is
 * the in-process write(2) ceiling.
 */
export async function groupCommitRate(dir: string, writers: number, files: 'shared' | 'own', sync: boolean, b: Bounds): Promise<Rate> {
  const count = files === 'shared' ? 1 : writers;
  const handles = await Promise.all(Array.from({ length: count }, (_, i) => fs.open(path.join(dir, `gc-${files}-${sync}-${i}.log`), 'a')));
  try {
    const logs = handles.map((fh) => new GroupCommitFile(fh, sync));
    const calls = Array.from({ length: writers }, (_, i) => {
      const log = logs[files === 'shared' ? 0 : i] as GroupCommitFile;
      return () => log.append(LINE);
    });
    return await eachAwaiting(calls, b);
  } finally {
    await Promise.all(handles.map((fh) => fh.close()));
  }
}

/** One durable state.json rewrite per call: temp file, write, fsync, rename, directory fsync. */
export async function durableRewriteRate(dir: string, doc: Buffer, b: Bounds): Promise<Rate> {
  const file = path.join(dir, 'rewrite.json');
  const tmp = `${file}.tmp`;
  const start = nowUs();
  const end = start + b.maxMs * 1000;
  let count = 0;
  while (count < b.maxCount && nowUs() < end) {
    const fh = await fs.open(tmp, 'w', 0o600);
    try {
      await fh.write(doc);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, file);
    const d = await fs.open(dir, 'r');
    try {
      await d.sync();
    } finally {
      await d.close();
    }
    count++;
  }
  const seconds = (nowUs() - start) / 1e6;
  return { rate: count / seconds, count, seconds };
}

/** Why the SQLite ceiling cannot be measured here, or the versions that will measure it. */
export type SqliteProbe = { sqlite: string; python: string; skipped?: undefined } | { skipped: string };

/**
 * Asks python3 whether its standard-library sqlite3 is there (SQLITE_CEILING --probe). A missing
 * python3 or sqlite3 module skips the row with the reason; any other failure is the bench's error.
 */
export async function probeSqlite(python = 'python3'): Promise<SqliteProbe> {
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(python, [SQLITE_CEILING, '--probe']));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { skipped: `${python} is not on PATH` };
    throw err;
  }
  const out = JSON.parse(stdout) as { sqlite: string; python: string } | { unavailable: string };
  return 'unavailable' in out ? { skipped: out.unavailable } : out;
}

/**
 * The alternative a user might pick: SQLite (python3's sqlite3, a native SQLite, in its own
 * process), WAL, synchronous=FULL, one row of LINE per transaction (each INSERT autocommits, so
 * each is fsynced before the next), within the same bounds as our runs. The script times only
 * its inserts; per insert, Python costs a few µs against a ~1 ms fsync (docs/performance.md).
 */
export async function sqliteRate(dir: string, b: Bounds): Promise<Rate> {
  const args = [SQLITE_CEILING, path.join(dir, 'bench.sqlite'), String(b.maxCount), String(b.maxMs), LINE.toString('utf8')];
  const { stdout } = await execFileAsync('python3', args);
  return JSON.parse(stdout) as Rate;
}
