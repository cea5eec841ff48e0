// The idempotency keys of a batch of transcript appends (append-keys.ts), each with the seq its
// entry will get: noted in the keys' log before the batch's bytes are written, and carried in the
// batch's write-ahead record (WalRecord's `k`) in sync mode.
import { crc32 } from 'node:zlib';
import type { AppendKeys } from './append-keys.js';
import type { Pending } from './transcript-options.js';
import type { Snapshot } from './transcript-scan.js';

/** Notes the keyed appends of a batch to `rel` (inode `ino`), with the seq each will get, before their bytes are written. */
export function noteKeys(keys: AppendKeys, rel: string, snap: Snapshot, pending: Pending[], ino: number, offsets: number[], bufs: Buffer[]): Promise<void> {
  const lines = [];
  for (const [i, p] of pending.entries()) {
    const buf = bufs[i] as Buffer;
    if (p.key) lines.push({ key: p.key, answer: { seq: snap.firstSeq + snap.count + i }, place: { f: rel, i: ino, o: offsets[i] as number, n: buf.length, c: crc32(buf) } });
  }
  return lines.length > 0 ? keys.note(lines) : Promise.resolve();
}

/** The keys of a batch's keyed appends with the seq each will get, or undefined when none has one. */
export function walKeys(snap: Snapshot, pending: Pending[]): [string, number, number][] | undefined {
  let keys: [string, number, number][] | undefined;
  for (const [i, p] of pending.entries()) if (p.key) (keys ??= []).push([p.key.id, p.key.seq, snap.firstSeq + snap.count + i]);
  return keys;
}
