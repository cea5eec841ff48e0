// A read-only check of a state dir or of a backup (docs/operations.md, "Verify"): every file
// loads, every transcript and journal line is one its readers take (verify-lines.ts), the side
// files agree with the files they describe and the idempotency keys read (verify-side.ts), and a
// backup's files match its manifest. Nothing is written: no repair, no lock taken, no side file
// rebuilt (the store's own readers repair; this one reports).
import fs from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import type { BackupManifest } from './backup-manifest.js';
import { APPEND_KEYS_FILE } from './append-keys-log.js';
import { isBackupFile, KEY_FILES, MANIFEST_NAME, parseManifest, UNFINISHED_NAME } from './backup-manifest.js';
import { hashFile } from './file-copy.js';
import { DecodeError, decodeStateText } from './go-decode.js';
import { goDecodeUtf8 } from './go-text.js';
import { nodeIo } from './io.js';
import { sideOf } from './paths.js';
import { STATE_KEYS_FILE } from './state-keys.js';
import { anyExists, listed, walk } from './verify-files.js';
import { checkJournal, checkTranscript } from './verify-lines.js';
import { checkKeys, checkSideFiles } from './verify-side.js';
import { WRITERS_FILE } from './writer-sequences.js';

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

/** Where a check reports what it finds wrong. */
export type Report = (file: string, message: string, line?: number) => void;

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
