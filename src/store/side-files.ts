// A state file other than state.json keeps its side files in a folder of its own (paths.ts,
// sideOf). Before that layout every state file of a folder shared state.json's: `wal.log`,
// `high-water.json` and `transcripts/<name>.json(.copy)` under `.herrscher-state/`. The first
// start of such a state file in its own folder takes over what the shared files hold for it, so
// no acknowledged append, no seq and no compacted usage is lost by the move:
// - the shared marks raise its own (a mark only ever makes a seq higher);
// - each shared meta is copied where its own is missing (a meta names the transcript file it
//   describes by inode and first bytes, so one about another state file's transcript is never used);
// - the shared log is replayed (idempotent: bytes already in place are skipped) and left as it is
//   for state.json, but only while no server of state.json holds its server lock (one that does
//   replayed that log at its own start, and writes to it now).
// A marker file ends it: later starts do nothing here. What it writes is synced when the store's
// durability is `sync`; with `write` (no fsync anywhere, as Go's package) it is not, and a power
// loss that drops the marker only makes the next start take the shared files over again (each step is idempotent).
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import { HIGH_WATER_REL, HighWater } from './high-water.js';
import type { Io } from './io.js';
import { lockServer } from './lock.js';
import { LEGACY_SIDE } from './paths.js';
import { ioError, StoreError } from './store-error.js';
import type { StoreLog } from './store-log.js';
import { WAL_REL } from './wal-record.js';
import { replayWal } from './wal-replay.js';

const MARKER = 'adopted-shared-side-files';
const META_FILE = /\.json(\.copy)?$/;

/** Takes over the shared side files for the state file whose side folder is `side` (see above). */
export async function adoptSharedSideFiles(
  io: Io,
  dir: string,
  side: string,
  { marks, nameOf, log, sync = true }: { marks: HighWater; nameOf: (transcriptRel: string) => string; log: StoreLog; sync?: boolean },
): Promise<void> {
  if (side === LEGACY_SIDE) return;
  const marker = path.join(dir, side, MARKER);
  if (await exists(io, marker)) return;
  const shared = await HighWater.load(io, dir, log, HIGH_WATER_REL);
  for (const [name, next] of shared.entries()) marks.raise(name, next);
  await copyMetas(io, dir, side, sync);
  let serverLock;
  try {
    serverLock = lockServer(
      path.join(dir, LEGACY_SIDE, 'server.lock'),
      // Stryker disable next-line StringLiteral: the state file's name only words the 'locked' error, caught here and never shown
      path.join(dir, 'state.json'),
    );
  } catch (err) {
    if (!(err instanceof StoreError && err.kind === 'locked')) throw err;
    log.warn(`${WAL_REL} not replayed for this state file: a server of state.json holds it (it replayed the log at its start)`);
  }
  if (serverLock) {
    try {
      await replayWal(io, dir, log, async (seqs) => {
        for (const [rel, next] of seqs) marks.raise(nameOf(rel), next);
      }, { rel: WAL_REL, keepLog: true });
    } finally {
      serverLock.release();
    }
  }
  await marks.save();
  try {
    // Stryker disable next-line StringLiteral: only the marker's existence is ever looked at; its text is for a reader
    await io.writeAtomic(marker, 'the shared side files of .herrscher-state/ were taken over\n', { mode: 0o600, sync });
  } catch (err) {
    throw ioError('write', path.join(side, MARKER), err);
  }
}

async function copyMetas(io: Io, dir: string, side: string, sync: boolean): Promise<void> {
  const from = path.join(LEGACY_SIDE, 'transcripts');
  let names: string[];
  try {
    names = await io.readdir(path.join(dir, from));
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return;
    throw ioError('list', from, err);
  }
  const to = path.join(side, 'transcripts');
  await io.mkdir(path.join(dir, to), 0o700);
  for (const n of names.filter((x) => META_FILE.test(x))) {
    if (await exists(io, path.join(dir, to, n))) continue;
    let bytes: Buffer;
    try {
      bytes = await io.readFile(path.join(dir, from, n));
    } catch (err) {
      if (isErrno(err, 'ENOENT')) continue;
      throw ioError('read', path.join(from, n), err);
    }
    try {
      await io.writeAtomic(path.join(dir, to, n), bytes, { mode: 0o600, sync });
    } catch (err) {
      throw ioError('write', path.join(to, n), err);
    }
  }
  if (sync) await io.syncDir(path.join(dir, to));
}

async function exists(io: Io, file: string): Promise<boolean> {
  try {
    await io.lstat(file);
    return true;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return false;
    throw err;
  }
}
