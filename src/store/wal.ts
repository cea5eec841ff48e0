// The write-ahead log behind `--durability sync`: every append to a transcript or a journal is
// also recorded here, and the record's fdatasync is what makes the append durable. One log
// shared by every file means one fdatasync per batch, whatever the number of sessions (per-file
// fdatasyncs are bound by how many the disk does concurrently). The Go-format files themselves
// are written without a sync; after a crash, `replayWal` puts back any record they lack.
//
// A record: `<crc32 hex> <json>\n`, json = {f: file relative to the state dir, i: its inode,
// o: its size before the append, d: the bytes appended}. Replay is idempotent: a record whose
// bytes are already at `o` is skipped, a file replaced since (another inode) or gone is left alone.
// The log is emptied (a checkpoint: every file written since is fdatasync'ed first) when it grows
// past a bound and before a file is replaced or removed, so no record can outlive its file.
import { constants as fsConstants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import type { Io } from './io.js';
import { ioError } from './store-error.js';

export const WAL_REL = '.herrscher-state/wal.log';
/** Past this size the log is checkpointed: replay after a crash stays short. */
const CHECKPOINT_BYTES = 16 * 1024 * 1024;

export interface WalRecord {
  /** The file, relative to the state dir. */
  readonly f: string;
  readonly i: number;
  readonly o: number;
  readonly d: string;
}

interface Pending {
  readonly bytes: Buffer;
  readonly file: string;
  resolve(): void;
  reject(err: unknown): void;
}

const encodeRecord = (r: WalRecord): Buffer => {
  const json = JSON.stringify(r);
  return Buffer.from(`${crc32(json).toString(16).padStart(8, '0')} ${json}\n`);
};

/** The records of a log's bytes, up to the first torn or corrupt one (a crash mid-write). */
export function parseWal(buf: Buffer): WalRecord[] {
  const out: WalRecord[] = [];
  let start = 0;
  for (let end = buf.indexOf(0x0a, start); end >= 0; end = buf.indexOf(0x0a, start)) {
    const line = buf.toString('utf8', start, end);
    start = end + 1;
    const json = line.slice(9);
    if (line[8] !== ' ' || crc32(json).toString(16).padStart(8, '0') !== line.slice(0, 8)) break;
    out.push(JSON.parse(json) as WalRecord);
  }
  return out;
}

export class WriteAheadLog {
  private queue: Pending[] = [];
  private writing: Promise<void> | undefined;
  private size = 0;
  /** Files written since the last checkpoint, which must be synced before the log is emptied. */
  private readonly dirty = new Set<string>();
  private checkpointing: Promise<void> | undefined;

  /** Bytes in the log not yet checkpointed (`status` reports them). */
  get bytes(): number {
    return this.size;
  }

  private constructor(
    private readonly io: Io,
    private readonly dir: string,
    private readonly fh: FileHandle,
    private readonly syncFile: (rel: string) => Promise<void>,
    private readonly checkpointBytes: number,
  ) {}

  /**
   * Opens the (already replayed and emptied) log. `syncFile` fdatasyncs one of the store's files
   * by its relative name, for checkpoints.
   */
  static async open(
    io: Io,
    dir: string,
    syncFile: (rel: string) => Promise<void>,
    checkpointBytes = CHECKPOINT_BYTES,
  ): Promise<WriteAheadLog> {
    const file = path.join(dir, WAL_REL);
    try {
      await io.mkdir(path.dirname(file), 0o700);
      const fh = await io.open(file, 'a+', 0o600);
      const wal = new WriteAheadLog(io, dir, fh, syncFile, checkpointBytes);
      wal.size = await io.size(fh);
      return wal;
    } catch (err) {
      throw ioError('open', WAL_REL, err);
    }
  }

  /**
   * Records an append already written to its file; resolves once the record is on disk. Records
   * that arrive while a sync runs share the next one.
   */
  record(r: WalRecord): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ bytes: encodeRecord(r), file: r.f, resolve, reject });
      this.kick();
    });
  }

  /** Starts a drain unless one runs or a checkpoint holds the log (it kicks when it is done). */
  private kick(): void {
    if (this.writing || this.checkpointing || this.queue.length === 0) return;
    this.writing = this.drain().finally(() => {
      this.writing = undefined;
      if (this.size > this.checkpointBytes && !this.checkpointing) void this.checkpoint().catch(() => undefined);
      else this.kick();
    });
  }

  /**
   * Syncs every file written since the last checkpoint, then empties the log. Runs between
   * batches; records arriving meanwhile wait for it.
   */
  checkpoint(): Promise<void> {
    this.checkpointing ??= (async () => {
      while (this.writing) await this.writing;
      try {
        await Promise.all([...this.dirty].map((rel) => this.syncFile(rel)));
        this.dirty.clear();
        await this.io.truncate(this.fh, 0);
        await this.io.datasync(this.fh);
        this.size = 0;
      } catch (err) {
        throw ioError('checkpoint', WAL_REL, err);
      }
    })().finally(() => {
      this.checkpointing = undefined;
      this.kick();
    });
    return this.checkpointing;
  }

  async close(): Promise<void> {
    while (this.writing || this.checkpointing) {
      await this.writing;
      await this.checkpointing?.catch(() => undefined);
    }
    await this.checkpoint().catch(() => undefined);
    await this.fh.close();
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && !this.checkpointing) {
      const batch = this.queue.splice(0);
      const before = this.size;
      try {
        await this.io.write(this.fh, batch.length === 1 ? (batch[0] as Pending).bytes : Buffer.concat(batch.map((p) => p.bytes)));
        await this.io.datasync(this.fh);
        this.size = before + batch.reduce((n, p) => n + p.bytes.length, 0);
      } catch (err) {
        // Records of a failed batch must not be replayed: cut the log back.
        await this.io.truncate(this.fh, before).catch(() => undefined);
        const e = ioError('append to', WAL_REL, err);
        for (const p of batch) p.reject(e);
        continue;
      }
      for (const p of batch) {
        this.dirty.add(p.file);
        p.resolve();
      }
    }
  }
}

/**
 * Puts back what a crash kept from the Go-format files: each record of the log whose bytes are
 * not yet at its offset is written there (a torn tail cut first), then every touched file is
 * synced and the log emptied. Returns how many records were applied.
 */
export async function replayWal(io: Io, dir: string, warn: (message: string, err?: unknown) => void): Promise<number> {
  const file = path.join(dir, WAL_REL);
  let buf: Buffer;
  try {
    buf = await io.readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw ioError('read', WAL_REL, err);
  }
  const records = parseWal(buf);
  const handles = new Map<string, FileHandle | null>();
  let applied = 0;
  try {
    for (const r of records) {
      if (!/^(transcripts\/[^/]+\.jsonl|participants\/[^/]+\.log)$/.test(r.f) || r.f.includes('..')) {
        warn(`wal: record for ${JSON.stringify(r.f)} ignored (not a store file)`);
        continue;
      }
      let fh = handles.get(r.f);
      if (fh === undefined) {
        // O_APPEND: after the truncate below, the write lands at the end, i.e. at r.o.
        fh = await io.open(path.join(dir, r.f), fsConstants.O_RDWR | fsConstants.O_APPEND).catch(() => null);
        if (fh && (await io.inode(fh)) !== r.i) {
          await fh.close();
          fh = null; // replaced since the record (compacted or recreated): the record is not about it
        }
        handles.set(r.f, fh);
      }
      if (!fh) continue;
      const data = Buffer.from(r.d);
      const size = await io.size(fh);
      if (size >= r.o + data.length) {
        const there = Buffer.alloc(data.length);
        await io.read(fh, there, r.o);
        if (!there.equals(data)) warn(`wal: ${r.f} holds other bytes at ${r.o} than its record; left as is`);
        continue;
      }
      if (size < r.o) {
        warn(`wal: ${r.f} is shorter (${size}) than its record's offset ${r.o}; left as is`);
        continue;
      }
      await io.truncate(fh, r.o);
      await io.write(fh, data);
      applied++;
    }
    for (const fh of handles.values()) if (fh) await io.datasync(fh);
  } catch (err) {
    throw ioError('replay', WAL_REL, err);
  } finally {
    for (const fh of handles.values()) await fh?.close().catch(() => undefined);
  }
  const wal = await io.open(file, 'r+');
  try {
    await io.truncate(wal, 0);
    await io.datasync(wal);
  } finally {
    await wal.close();
  }
  if (applied) warn(`wal: ${applied} append(s) the files lacked after a crash were put back`);
  return applied;
}
