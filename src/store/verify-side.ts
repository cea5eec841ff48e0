// Verify's checks of the side files: the idempotency keys read as the server reads them, and the
// seq marks, transcript metas and write-ahead log against the files they describe.
import { constants as C } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import { decodeKeyLine } from './append-keys-log.js';
import { HighWater, highWaterRelIn } from './high-water.js';
import { nodeIo } from './io.js';
import { NewerFormatError } from './sealed-line.js';
import { decodeStateKeyLine } from './state-keys.js';
import { storeLog } from './store-log.js';
import { findGeneration, HEAD_BYTES, metaRel } from './transcript-meta.js';
import type { Report } from './verify.js';
import { listed } from './verify-files.js';
import { scanWal, walRelIn } from './wal-record.js';
import { decodeWriters } from './writer-sequences.js';

/**
 * The idempotency keys (state-keys.ts and its previous format writers.json, append-keys.ts) read
 * as the server reads them. What it skips loses keys (a write sent again is then applied twice),
 * so each skip is named; in a live dir but for a torn last line of a log, which a crash leaves
 * (its write was never made either). Their places are checked by the server's start (against the files after the
 * log's replay), not here. Files already counted (a backup's) or not there are not counted again.
 */
export async function checkKeys(dir: string, rels: { writers: string; stateKeys: string; appendKeys: string }, backup: boolean, problem: Report): Promise<void> {
  const read = async (rel: string): Promise<string | undefined> => {
    try {
      return (await nodeIo.readFile(path.join(dir, rel))).toString('utf8');
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) problem(rel, `cannot be read: ${(err as Error).message}`);
      return undefined;
    }
  };
  const writers = await read(rels.writers);
  if (writers !== undefined) {
    const got = decodeWriters(writers);
    if ('problem' in got) problem(rels.writers, `${got.problem}: the server ignores it, so a write it holds the key of is applied again when sent again`);
  }
  const logs: [string, (raw: string) => { newer: number } | { damaged: string } | object, string][] = [
    [rels.stateKeys, decodeStateKeyLine, 'the write it holds the key of is applied again when sent again'],
    [rels.appendKeys, decodeKeyLine, 'the append it holds the key of is written again when sent again'],
  ];
  for (const [rel, decode, lost] of logs) {
    const text = await read(rel);
    if (text === undefined) continue;
    const lines = text.split('\n');
    lines.forEach((raw, i) => {
      if (raw === '') return;
      const got = decode(raw);
      if ('newer' in got) problem(rel, new NewerFormatError(rel, got.newer).message, i + 1);
      else if ('damaged' in got && (backup || i < lines.length - 1)) problem(rel, `${got.damaged}: the server skips it, so ${lost}`, i + 1);
    });
  }
}

/** The side folder's files (marks, metas, write-ahead log) against the files they describe; returns how many were read. */
export async function checkSideFiles(dir: string, side: string, problem: Report): Promise<number> {
  let files = 0;
  const marksRel = highWaterRelIn(side);
  const log = storeLog({ error: (message) => problem(marksRel, message) });
  try {
    await HighWater.load(nodeIo, dir, log, marksRel);
    files++;
  } catch (err) {
    problem(marksRel, `cannot be read: ${(err as Error).message}`);
  }
  for (const rel of await listed(dir, 'transcripts', '.jsonl')) {
    const name = rel.slice('transcripts/'.length, -'.jsonl'.length);
    const meta = metaRel(name, side);
    let ino: number;
    const prefix = Buffer.alloc(HEAD_BYTES);
    let got = 0;
    try {
      const fh = await fs.open(path.join(dir, rel), C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
      try {
        ino = (await fh.stat()).ino;
        got = (await fh.read(prefix, 0, HEAD_BYTES, 0)).bytesRead;
      } finally {
        await fh.close();
      }
      const found = await findGeneration(nodeIo, path.join(dir, meta), meta, ino, prefix.subarray(0, got));
      if (!found.any) continue;
      files += 2 - found.missing.length;
      for (const r of found.damaged) problem(r, `damaged, or describes neither ${rel} nor the file it replaced`);
      if (!found.gen) continue;
      for (const r of found.missing) problem(r, `missing (its other copy describes ${rel}; the server rebuilds it when it reads the transcript)`);
    } catch (err) {
      problem(meta, `cannot be read: ${(err as Error).message}`);
    }
  }
  const wal = walRelIn(side);
  let buf: Buffer | undefined;
  try {
    buf = await nodeIo.readFile(path.join(dir, wal));
    files++;
  } catch (err) {
    if (!isErrno(err, 'ENOENT')) problem(wal, `cannot be read: ${(err as Error).message}`);
  }
  if (buf) {
    const scan = scanWal(buf);
    for (const d of scan.damaged) problem(wal, `damaged record (${d.why}): the replay skips it`, d.line);
    if (scan.newer) problem(wal, new NewerFormatError(wal, scan.newer.version).message, scan.newer.line);
  }
  return files;
}
