// Opening a state dir: its folder checked (private, reached through at most one link), the server
// lock taken (and a host's daemon lock adopted, when handed over), temp files a crash left swept, the
// side files recovered (recovery.ts), state.json loaded, and in sync mode the write-ahead log
// opened. A start that fails releases what it took and removes the folders it made, so a refused
// start leaves the dir as it found it.
import { rmdir } from 'node:fs/promises';
import path from 'node:path';
import { INSTANCE_ID_PATTERN } from '../protocol/model.js';
import { isErrno } from '../common/errno.js';
import { removeStaleStaging } from './backup-fix.js';
import { StorageHealth } from './health.js';
import { countingSyncs, StoreCounters } from './store-counters.js';
import type { HighWater } from './high-water.js';
import type { Io } from './io.js';
import { nodeIo } from './io.js';
import { openingIo } from './open-io.js';
import type { HeldLock } from './lock.js';
import { adoptLock, loadFlockBinding, lockServer } from './lock.js';
import { cachedNamesForFdLimit } from './name-cache.js';
import type { StatePaths } from './paths.js';
import { statePaths } from './paths.js';
import { recover } from './recovery.js';
import type { Durability } from './state-store.js';
import { StateStore } from './state-store.js';
import { assertPrivateDir, confine } from './state-dir.js';
import { StateDirWatch } from './state-gone.js';
import type { StoreLog } from './store-log.js';
import { ioError } from './store-error.js';
import { storeLog } from './store-log.js';
import { sweepTempFiles } from './sweep.js';
import { WriteAheadLog } from './wal.js';
import { walRelIn } from './wal-record.js';
import { AppendKeys } from './append-keys.js';
import { APPEND_KEYS_FILE } from './append-keys-log.js';

export interface StoreOptions {
  /** `sync` (default): a write resolves once it is on disk. `write`: once write(2) returned, as Go. */
  durability?: Durability;
  /** Take the server lock in the side folder (default true; paths.ts serverLockPath). */
  lock?: boolean;
  /**
   * A descriptor through which the host that started us holds Herrscher's daemon lock
   * `<dir>/.<base>.lock` (`serve --lock-fd`): adopted and held until close, besides the server
   * lock. Without it the daemon lock is never created nor taken.
   */
  lockFd?: number;
  /** The file-system seam (tests inject failures through it). */
  io?: Io;
  /** Where the store reports what it tolerated and repaired (a torn tail cut, a replay). */
  warn?: (message: string, err?: unknown) => void;
  /** Where the store reports what went wrong with no caller to tell (default: `warn`). */
  error?: (message: string, err?: unknown) => void;
  /**
   * The storage health `status` reports (default: a new one, as `store.health`): fed with every
   * such error and each checkpoint's outcome.
   */
  health?: StorageHealth;
  /** What `status` counts of the store's work (default: a new one, as `store.counters`). */
  counters?: StoreCounters;
  /**
   * Names whose Transcript and Participants objects are kept while idle (default
   * DEFAULT_CACHED_NAMES each kind, fewer under a low limit on open files:
   * cachedNamesForFdLimit); more only while calls on them are in flight.
   */
  cachedNames?: number;
  /** Size past which the write-ahead log is checkpointed (default 16 MiB; tests go lower). */
  walCheckpointBytes?: number;
}

/** What openStore has opened and checked, handed to the Store it makes. */
export interface StoreParts {
  statePath: string;
  dir: string;
  /** This state file's side folder, relative to dir (paths.ts, sideOf). */
  side: string;
  state: StateStore;
  io: Io;
  durability: Durability;
  lock: HeldLock | undefined;
  log: StoreLog;
  wal: WriteAheadLog | undefined;
  marks: HighWater;
  /** The idempotency keys of transcript appends (append-keys.ts). */
  appendKeys: AppendKeys;
  health: StorageHealth;
  counters: StoreCounters;
  /** How many idle names keep their Transcript and Participants objects. */
  cachedNames: number;
  /** Whether the state dir is still the one opened (state-gone.ts). */
  dirWatch: StateDirWatch;
}

/** Locks, sweeps temp files a crash left, recovers the side files and loads state.json (see StateStore.load). */
export async function openStore(statePath: string, options: StoreOptions = {}): Promise<StoreParts> {
  if (options.io) return openStoreWith(statePath, options, options.io);
  // The open's many small calls on the main thread, not one thread-pool hop each (open-io.ts).
  const opening = openingIo(nodeIo);
  try {
    return await openStoreWith(statePath, options, opening.io);
  } finally {
    opening.end();
  }
}

async function openStoreWith(statePath: string, options: StoreOptions, baseIo: Io): Promise<StoreParts> {
  const given = statePaths(statePath);
  const durability = options.durability ?? 'sync';
  if (options.lock !== false) loadFlockBinding(); // before anything is made on disk
  // Go's Save makes the folders down to the state dir (MkdirAll); only an open does here.
  const freshDir = await mkdirAll(baseIo, given.dir);
  // The dir itself may be reached through a link (a configured path); nothing inside it is.
  const dir = await baseIo.realpath(given.dir);
  const dirStat = await assertPrivateDir(baseIo, dir);
  const paths = statePaths(path.join(dir, path.basename(given.statePath)));
  const counters = options.counters ?? new StoreCounters();
  const io = countingSyncs(confine(baseIo, dir), counters);
  // The daemon's lock only when a host hands it over: the store's own is the server lock below.
  const lock = options.lock === false || options.lockFd === undefined ? undefined
    : adoptLock(options.lockFd, paths.lockPath, paths.statePath);
  const health = options.health ?? new StorageHealth();
  const log = storeLog({ warn: options.warn, error: options.error, health });
  let wal: WriteAheadLog | undefined;
  let serverLock: HeldLock | undefined;
  // Folders this start creates: a start that fails removes them again (a refused start changes nothing).
  const created = await missingFolders(io, paths.dir, paths.side);
  // What this open makes holds nothing to sweep, recover or load: those looks are skipped (a new
  // state costs a call, not a dozen reads that find nothing).
  const fresh = { dir: freshDir, side: created.includes(paths.side) };
  try {
    await io.mkdir(path.join(paths.dir, paths.side), 0o700);
    if (options.lock !== false) serverLock = lockServer(paths.serverLockPath, paths.statePath, options.lockFd);
    await sweepTempFiles(io, paths.dir, path.basename(paths.statePath), log, paths.side, fresh);
    // A backup killed before its end left hard links to every file it fixed: they pin the disk
    // space of transcripts compacted or removed since, until the next backup; no backup runs yet.
    if (!fresh.side) await removeStaleStaging(path.join(paths.dir, paths.side)).catch((err: unknown) => log.error('backup staging folders not removed', ioError('remove', paths.side, err)));
    // Before anything reads a transcript: put back what a crash kept from the files.
    const marks = await recover(io, paths.dir, paths.side, log, { freshSide: fresh.side, sync: durability === 'sync' });
    // After the replay: a key counts only if its append's bytes are in the file.
    const appendKeys = await AppendKeys.load(io, paths.dir, path.join(paths.dir, paths.side, APPEND_KEYS_FILE), { sync: durability === 'sync', fresh: fresh.side });
    const state = await StateStore.load(io, paths.statePath, durability, log, path.join(paths.dir, paths.side), fresh);
    const id = state.document.instanceID ?? '';
    if (id !== '' && !INSTANCE_ID_PATTERN.test(id)) {
      // Written by another writer (Go checks nothing): served all the same, on the socket without it.
      log.warn(`state.json's instanceID ${JSON.stringify(id.slice(0, 40))} cannot name a socket (1-32 letters, digits, "_", "." or "-"); `
        + 'the default socket without an instance id is served instead');
    }
    if (durability === 'sync') {
      wal = await WriteAheadLog.open(io, paths.dir, {
        syncFile: (rel) => syncByName(io, paths.dir, rel), log,
        // What only its records said is written down before they go: the seq after each, and (synced) the keys' lines.
        beforeEmpty: async () => {
          await marks.save();
          await appendKeys.sync();
        },
        checkpointBytes: options.walCheckpointBytes, rel: walRelIn(paths.side),
      });
    }
    return {
      statePath: paths.statePath, dir: paths.dir, side: paths.side, state, io, durability, lock: bothLocks(serverLock, lock), log, wal,
      marks, appendKeys, health, counters, cachedNames: options.cachedNames ?? cachedNamesForFdLimit(), dirWatch: new StateDirWatch(baseIo, dir, dirStat),
    };
  } catch (err) {
    serverLock?.release();
    await removeIfCreated(io, paths, created);
    lock?.release();
    throw err;
  }
}

/**
 * Makes `dir` and every missing folder above it, one at a time (Io.mkdir makes one); true when
 * `dir` itself was made here (it holds nothing yet). One that exists is only looked at.
 */
async function mkdirAll(io: Io, dir: string): Promise<boolean> {
  try {
    await io.lstat(dir);
    return false; // what it is (a folder, a link to one, private) is checked next
  } catch (err) {
    if (!isErrno(err, 'ENOENT')) throw err;
  }
  const parent = path.dirname(dir);
  if (parent !== dir) await mkdirAll(io, parent);
  await io.mkdir(dir, 0o700);
  return true;
}

/** The folders of `side` (relative to dir) that do not exist yet, outermost first. */
async function missingFolders(io: Io, dir: string, side: string): Promise<string[]> {
  const parts = side.split('/');
  const out: string[] = [];
  for (let i = 1; i <= parts.length; i++) {
    const rel = parts.slice(0, i).join('/');
    try {
      await io.lstat(path.join(dir, rel));
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
      out.push(rel);
    }
  }
  return out;
}

/** After a failed start: the server lock file and the folders the start made, when nothing else is in them. */
async function removeIfCreated(io: Io, paths: StatePaths, created: string[]): Promise<void> {
  if (created.length === 0) return;
  try {
    await io.unlink(paths.serverLockPath);
  } catch {
    // absent (the start failed before taking it) or not removable: the folders then stay, harmless
  }
  for (const rel of created.reverse()) {
    try {
      await rmdir(path.join(paths.dir, rel));
    } catch {
      return; // not empty: the start wrote something there that is worth keeping; leave it
    }
  }
}

/** The server lock, then the adopted daemon lock, released as one (the server's first). */
function bothLocks(server: HeldLock | undefined, state: HeldLock | undefined): HeldLock | undefined {
  if (!state) return server;
  return {
    release() {
      server?.release();
      state.release();
    },
  };
}

/** fdatasync of a store file by its relative name (a checkpoint); a file removed since is fine. */
async function syncByName(io: Io, dir: string, rel: string): Promise<void> {
  let fh;
  try {
    fh = await io.open(path.join(dir, rel), 'r');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return; // removed since it was written: nothing to sync
    throw err;
  }
  try {
    await io.datasync(fh);
  } finally {
    await fh.close();
  }
}
