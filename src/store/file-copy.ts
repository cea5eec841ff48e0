// Copying a store file for a backup or a restore: the first `size` bytes (a file appended to
// meanwhile keeps growing past them), hashed on the way, synced before it counts as written; and
// writing a backup's file made from memory the same way.
import { createHash } from 'node:crypto';
import { constants as C } from 'node:fs';
import fs from 'node:fs/promises';

/** Bytes read and written per step: the event loop runs between steps. */
const STEP = 1024 * 1024;

export interface Copied {
  size: number;
  sha256: string;
}

/**
 * Copies the first `size` bytes of `from` (all of it when undefined) into a new file `to` (0600,
 * O_EXCL: never written through a link), fdatasynced. Fails when `from` holds fewer.
 */
export async function copyPrefix(from: string, to: string, size?: number): Promise<Copied> {
  const src = await fs.open(from, C.O_RDONLY | C.O_NOFOLLOW);
  try {
    const want = size ?? (await src.stat()).size;
    const dst = await fs.open(to, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, 0o600);
    try {
      const hash = createHash('sha256');
      const buf = Buffer.alloc(Math.min(STEP, Math.max(want, 1)));
      let pos = 0;
      while (pos < want) {
        const { bytesRead } = await src.read(buf, 0, Math.min(buf.length, want - pos), pos);
        if (bytesRead === 0) throw Object.assign(new Error(`${from} ended at ${pos} bytes, ${want} expected`), { code: 'EIO' });
        const chunk = buf.subarray(0, bytesRead);
        hash.update(chunk);
        let off = 0;
        while (off < chunk.length) off += (await dst.write(chunk, off, chunk.length - off)).bytesWritten;
        pos += bytesRead;
      }
      await dst.datasync();
      return { size: want, sha256: hash.digest('hex') };
    } finally {
      await dst.close();
    }
  } finally {
    await src.close();
  }
}

/** Writes `text` into a new file `file` (0600, O_EXCL), fdatasynced; its size and SHA-256. */
export async function writeNewFile(file: string, text: string): Promise<Copied> {
  const bytes = Buffer.from(text);
  const fh = await fs.open(file, C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW, 0o600);
  try {
    await fh.writeFile(bytes);
    await fh.datasync();
  } finally {
    await fh.close();
  }
  return { size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** SHA-256 and size of a whole file (verify). */
export async function hashFile(file: string): Promise<Copied> {
  const fh = await fs.open(file, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'EFTYPE' });
    const hash = createHash('sha256');
    const buf = Buffer.alloc(STEP);
    let size = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, size);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
      size += bytesRead;
    }
    return { size, sha256: hash.digest('hex') };
  } finally {
    await fh.close();
  }
}

/** fsync of a folder: the names created in it survive a power loss. */
export async function syncFolder(dir: string): Promise<void> {
  const fh = await fs.open(dir, C.O_RDONLY | C.O_DIRECTORY);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
