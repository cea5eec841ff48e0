// A file's head: what, beside its inode, names one version of a transcript or journal file. An
// inode number is reused once its file is removed (ext4 hands the next new file the same one), so
// "the file with inode i" can be another file than the one a side file or a log record is about;
// the checksum of its first bytes (which appends never change) tells them apart. A transcript
// meta's generation and a write-ahead record each carry one.
import { crc32Hex } from './sealed-line.js';

/** How many of a file's first bytes a head covers at most. */
export const HEAD_BYTES = 4096;

/** Written `<n>:<crc32 hex>`: the checksum of the file's first n bytes. */
export const HEAD_PATTERN = /^(\d+):([0-9a-f]{8})$/;

/** The head of a file whose first bytes are `prefix` (at most HEAD_BYTES of it are used). */
export function headOf(prefix: Buffer): string {
  const n = Math.min(prefix.length, HEAD_BYTES);
  return `${n}:${crc32Hex(prefix.subarray(0, n))}`;
}

/** How many first bytes `head` covers (undefined when it is not a head). */
export function headLength(head: string): number | undefined {
  const m = HEAD_PATTERN.exec(head);
  return m ? Number(m[1]) : undefined;
}

/** Whether a file whose first bytes are `prefix` (HEAD_BYTES, or the whole file) is the one `head` describes. */
export function headFits(head: string, prefix: Buffer): boolean {
  const m = HEAD_PATTERN.exec(head);
  const n = Number(m?.[1]);
  return m !== null && n <= prefix.length && crc32Hex(prefix.subarray(0, n)) === m[2];
}
