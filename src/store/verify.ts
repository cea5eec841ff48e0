// A read-only check of a state dir or of a backup (docs/operations.md, "Verify"): every file
// loads, every transcript and journal line is one its readers take, the side files agree with
// the files they describe, the idempotency keys read, and a backup's files match its manifest. Nothing is written: no
// repair, no lock taken, no side file rebuilt (the store's own readers repair; this one reports).
import { constants as C } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import type { BackupManifest } from './backup-manifest.js';
import { APPEND_KEYS_FILE, decodeKeyLine } from './append-keys.js';
import { isBackupFile, KEY_FILES, MANIFEST_NAME, parseManifest, UNFINISHED_NAME } from './backup-manifest.js';
import { hashFile } from './file-copy.js';
import { DecodeError, decodeStateText } from './go-decode.js';
import { goDecodeUtf8, goTrimSpace } from './go-text.js';
import { HighWater, highWaterRelIn } from './high-water.js';
import { nodeIo } from './io.js';
import { scanLines } from './line-scan.js';
import { isPathComponent, sideOf } from './paths.js';
import { storeLog } from './store-log.js';
import { findGeneration, HEAD_BYTES, metaRel } from './transcript-meta.js';
import { parseLine } from './transcript-read.js';
import { NewerFormatError } from './sealed-line.js';
import { scanWal, walRelIn } from './wal-record.js';
import { decodeStateKeyLine, STATE_KEYS_FILE } from './state-keys.js';
import { decodeWriters, WRITERS_FILE } from './writer-sequences.js';

/** One thing wrong: the file (relative to the folder checked), the line when there is one, what. */
export interface Problem {
  file: string;
  line?: number;
  message: string;
}

export interface VerifyReport {
  /** The folder checked, and whether it is a backup (it has a manifest). */
  dir: string;
  backup: boolean;
  /** The manifest, when it is a backup whose manifest could be read. */
  manifest?: BackupManifest;
  /** Files read. */
  files: number;
  problems: Problem[];
}

/** `file:line: message`, as compilers print it. */
export const formatProblem = (p: Problem): string => `${p.file}${p.line !== undefined ? `:${p.line}` : ''}: ${p.message}`;

/** Go's bufio.Scanner token limit: ReadParticipants stops at a longer line (participants.ts). */
const GO_SCAN_MAX_LINE = 64 * 1024 - 1;

/**
 * Checks the state file `stateBase` in `dir` and everything beside it; a folder with a
 * backup-manifest.json is checked as a backup (its files against the manifest, no side files).
 */
export async function verifyStateDir(dir: string, stateBase = 'state.json'): Promise<VerifyReport> {
  const report: VerifyReport = { dir, backup: false, files: 0, problems: [] };
  const problem = (file: string, message: string, line?: number): void => {
    report.problems.push({ file, ...(line !== undefined ? { line } : {}), message });
  };
  let manifestText: string | undefined;
  try {
    manifestText = await fs.readFile(path.join(dir, MANIFEST_NAME), 'utf8');
  } catch (err) {
    if (!isErrno(err, 'ENOENT')) problem(MANIFEST_NAME, `cannot be read: ${(err as Error).message}`);
    else if (await anyExists(dir, [UNFINISHED_NAME])) {
      report.backup = true;
      problem(MANIFEST_NAME, 'missing: an unfinished backup (its writer stopped before the manifest); take a new one');
      return report;
    }
  }
  if (manifestText !== undefined) {
    report.backup = true;
    stateBase = 'state.json';
    const parsed = parseManifest(manifestText);
    if ('problem' in parsed) problem(MANIFEST_NAME, parsed.problem);
    else {
      report.manifest = parsed.manifest;
      await checkAgainstManifest(dir, parsed.manifest, problem);
    }
  }
  const stateFound = await checkState(dir, stateBase, problem);
  report.files++;
  if (!report.backup && !stateFound && !(await anyExists(dir, [sideOf(stateBase), 'transcripts', 'participants']))) {
    problem(stateBase, `missing, and so are ${sideOf(stateBase)}/, transcripts/ and participants/: not a state dir (give the folder that holds state.json)`);
  }
  for (const rel of await listed(dir, 'transcripts', '.jsonl')) {
    report.files++;
    await checkTranscript(dir, rel, problem);
  }
  for (const rel of await listed(dir, 'participants', '.log')) {
    report.files++;
    await checkJournal(dir, rel, problem);
  }
  if (!report.backup) report.files += await checkSideFiles(dir, sideOf(stateBase), problem);
  const live = sideOf(stateBase);
  const keys = report.backup ? KEY_FILES : { writers: `${live}/${WRITERS_FILE}`, stateKeys: `${live}/${STATE_KEYS_FILE}`, appendKeys: `${live}/${APPEND_KEYS_FILE}` };
  await checkKeys(dir, keys, report.backup, problem);
  return report;
}

type Report = (file: string, message: string, line?: number) => void;

async function checkAgainstManifest(dir: string, m: BackupManifest, problem: Report): Promise<void> {
  for (const [rel, want] of Object.entries(m.files)) {
    let got;
    try {
      got = await hashFile(path.join(dir, rel));
    } catch (err) {
      problem(rel, isErrno(err, 'ENOENT') ? 'missing: the manifest lists it' : `cannot be read: ${(err as Error).message}`);
      continue;
    }
    if (got.size !== want.size) problem(rel, `size ${got.size}, the manifest says ${want.size}`);
    else if (got.sha256 !== want.sha256) problem(rel, `checksum mismatch: sha256 ${got.sha256}, the manifest says ${want.sha256}`);
  }
  for (const rel of await walk(dir, '')) {
    if (rel === MANIFEST_NAME) continue;
    if (!Object.prototype.hasOwnProperty.call(m.files, rel)) {
      problem(rel, isBackupFile(rel) ? 'extra file: the manifest does not list it' : 'extra file: not part of a backup');
    }
  }
}

/** Every entry below `dir/rel` that is not a folder, relative to dir. */
async function walk(dir: string, rel: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) out.push(...(await walk(dir, r)));
    else out.push(r);
  }
  return out;
}

/** Checks the state file; false when there is none. */
async function checkState(dir: string, base: string, problem: Report): Promise<boolean> {
  let bytes: Buffer;
  try {
    bytes = await nodeIo.readFile(path.join(dir, base));
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return false; // no file: the empty state, as Go's LoadState reads it
    problem(base, `cannot be read: ${(err as Error).message}`);
    return true;
  }
  try {
    decodeStateText(goDecodeUtf8(bytes), base);
  } catch (err) {
    if (!(err instanceof DecodeError)) throw err;
    problem(base, `does not load: ${err.message}`);
  }
  return true;
}

/** Whether any of `rels` exists in `dir` (a state dir with no state.json yet still has one of its folders). */
async function anyExists(dir: string, rels: string[]): Promise<boolean> {
  for (const rel of rels) {
    try {
      await fs.lstat(path.join(dir, rel));
      return true;
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) return true;
    }
  }
  return false;
}

/** `<folder>/<name><ext>` of each file whose name the store could have written, sorted. */
async function listed(dir: string, folder: string, ext: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(path.join(dir, folder));
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw err;
  }
  return names.filter((n) => n.endsWith(ext) && isPathComponent(n.slice(0, -ext.length))).sort().map((n) => `${folder}/${n}`);
}

/** Calls `onLine(line, number, terminated)` for each line of a file; false when it cannot be read. */
async function eachLine(dir: string, rel: string, problem: Report, onLine: (line: Buffer, n: number, terminated: boolean) => boolean | void): Promise<boolean> {
  let fh;
  try {
    fh = await fs.open(path.join(dir, rel), C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (err) {
    problem(rel, `cannot be read: ${(err as Error).message}`);
    return false;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) {
      problem(rel, 'is not a regular file');
      return false;
    }
    let n = 0;
    let end = st.size;
    await scanLines(nodeIo, fh, st.size, (line) => {
      n++;
      end -= line.length + 1;
      return onLine(line, n, end >= 0);
    }, { unterminated: true });
    return true;
  } finally {
    await fh.close();
  }
}

async function checkTranscript(dir: string, rel: string, problem: Report): Promise<void> {
  await eachLine(dir, rel, problem, (line, n, terminated) => {
    const text = goDecodeUtf8(line);
    if (goTrimSpace(text) === '' || parseLine(text)) return;
    problem(rel, terminated
      ? 'not a transcript entry: readers skip this line'
      : 'torn last line (no newline, not an entry): readers skip it, the next append cuts it', n);
  });
}

async function checkJournal(dir: string, rel: string, problem: Report): Promise<void> {
  await eachLine(dir, rel, problem, (line, n, terminated) => {
    if (line.length > GO_SCAN_MAX_LINE) {
      problem(rel, 'longer than 64 KiB: Go\'s reader stops here and drops every later id', n);
      return false;
    }
    if (!terminated) problem(rel, 'torn last line (no newline): readers skip it, the next append cuts it', n);
  });
}

/**
 * The idempotency keys (state-keys.ts and its previous format writers.json, append-keys.ts) read
 * as the server reads them. What it skips loses keys (a write sent again is then applied twice),
 * so each skip is named; in a live dir but for a torn last line of a log, which a crash leaves
 * (its write was never made either). Their places are checked by the server's start (against the files after the
 * log's replay), not here. Files already counted (a backup's) or not there are not counted again.
 */
async function checkKeys(dir: string, rels: { writers: string; stateKeys: string; appendKeys: string }, backup: boolean, problem: Report): Promise<void> {
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
async function checkSideFiles(dir: string, side: string, problem: Report): Promise<number> {
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
