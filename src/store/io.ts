// The few file-system calls the store makes, as one seam: tests swap a call to inject ENOSPC or
// EIO and check that nothing changed, the way sonic-boom's tests swap node:fs.
import { writeSync } from 'node:fs';
import fs from 'node:fs/promises';
import type writeFileAtomicType from 'write-file-atomic';

export interface Io {
  /** Whole-file replace: temp file, write, fsync (when `sync`), rename. */
  writeAtomic(file: string, data: string | Buffer, opts: { mode: number; sync: boolean }): Promise<void>;
  /** fsync of a directory, so a rename or a new file survives power loss. */
  syncDir(dir: string): Promise<void>;
  open(file: string, flags: string | number, mode?: number): Promise<fs.FileHandle>;
  write(fh: fs.FileHandle, buf: Buffer): Promise<number>;
  datasync(fh: fs.FileHandle): Promise<void>;
  truncate(fh: fs.FileHandle, len: number): Promise<void>;
  readFile(file: string): Promise<Buffer>;
  read(fh: fs.FileHandle, buf: Buffer, position: number): Promise<number>;
  size(fh: fs.FileHandle): Promise<number>;
  inode(fh: fs.FileHandle): Promise<number>;
  rename(from: string, to: string): Promise<void>;
  mkdir(dir: string, mode: number): Promise<void>;
  unlink(file: string): Promise<void>;
  readdir(dir: string): Promise<string[]>;
}

// Loaded on first use, not at start: its import costs ~15 ms of every spawn, and a server that
// only reads, or whose first write comes later, should not pay it before its first reply.
let writeFileAtomic: Promise<typeof writeFileAtomicType> | undefined;
const loadWriteFileAtomic = (): Promise<typeof writeFileAtomicType> =>
  (writeFileAtomic ??= import('write-file-atomic').then((m) => m.default));

export const nodeIo: Io = {
  writeAtomic: async (file, data, { mode, sync }) => (await loadWriteFileAtomic())(file, data, { mode, fsync: sync }),
  async syncDir(dir) {
    const fh = await fs.open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  },
  open: (file, flags, mode) => fs.open(file, flags, mode),
  // Appends are small writes to the page cache: done on the main thread, where a write(2) costs a
  // few µs, rather than through the thread pool, where the hand-off costs more than the write
  // (measured: server CPU per append). The durable part, fdatasync, stays off the main thread.
  write: async (fh, buf) => {
    let off = 0;
    while (off < buf.length) off += writeSync(fh.fd, buf, off, buf.length - off);
    return off;
  },
  datasync: (fh) => fh.datasync(),
  truncate: (fh, len) => fh.truncate(len),
  readFile: (file) => fs.readFile(file),
  read: async (fh, buf, position) => (await fh.read(buf, 0, buf.length, position)).bytesRead,
  size: async (fh) => (await fh.stat()).size,
  inode: async (fh) => (await fh.stat()).ino,
  rename: (from, to) => fs.rename(from, to),
  mkdir: async (dir, mode) => {
    await fs.mkdir(dir, { recursive: true, mode });
  },
  unlink: (file) => fs.unlink(file),
  readdir: (dir) => fs.readdir(dir),
};

/** Copies an Io with some calls replaced: the seam tests use. */
export function withIo(overrides: Partial<Io>): Io {
  return { ...nodeIo, ...overrides };
}
