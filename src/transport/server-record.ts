// Where a serving process records the socket it listens on: `<dir>/.herrscher-state/<base>.serving.json`
// beside the state file it serves, so a client that knows the state file finds its server
// whatever the socket is called (an instance id in the name, a host's own path). Removed at a
// clean stop; a record whose pid is gone (kill -9) is ignored.
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { errnoOf } from '../common/errno.js';

export interface ServerRecord {
  pid: number;
  /** Absolute path of the socket the server listens on. */
  socket: string;
  /** Absolute path of the state file served. */
  state: string;
  version: string;
  /** ISO 8601, UTC. */
  startedAt: string;
}


/** The record file of the server of `statePath`. */
export function serverRecordPath(statePath: string): string {
  const abs = path.resolve(statePath);
  return path.join(path.dirname(abs), '.herrscher-state', `${path.basename(abs)}.serving.json`);
}

/**
 * Writes the record (0600, through a temp file and a rename, never through a symlink): a
 * reader sees the old record or the new one, never half of one.
 */
export async function writeServerRecord(record: ServerRecord): Promise<void> {
  const file = serverRecordPath(record.state);
  await fs.mkdir(path.dirname(file), { mode: 0o700 }).catch((err: unknown) => {
    if (errnoOf(err) !== 'EEXIST') throw err;
  });
  const tmp = `${file}.${process.pid}.tmp`;
  // A temp file a crash of this pid left; unlink, not fs.rm, which loads node's rimraf module
  // before every start's first reply (a folder there fails both alike).
  await fs.unlink(tmp).catch((err: unknown) => {
    if (errnoOf(err) !== 'ENOENT') throw err;
  });
  const fh = await fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    await fh.writeFile(`${JSON.stringify(record)}\n`);
  } finally {
    await fh.close();
  }
  await fs.rename(tmp, file);
}

/** Removes the record of `statePath` if it is this process's (a newer server may have replaced it). */
export async function removeServerRecord(statePath: string, pid: number = process.pid): Promise<void> {
  const file = serverRecordPath(statePath);
  const current = await readRecordFile(file);
  if (current?.pid === pid) await fs.rm(file, { force: true });
}

/**
 * The record of the live server of `statePath`, or undefined when there is none: no file, or a
 * record whose pid no longer runs (a server killed with -9 cannot remove its own).
 */
export async function readLiveServerRecord(statePath: string): Promise<ServerRecord | undefined> {
  const r = await readRecordFile(serverRecordPath(statePath));
  return r && pidAlive(r.pid) ? r : undefined;
}

async function readRecordFile(file: string): Promise<ServerRecord | undefined> {
  let text: string;
  try {
    const fh = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      text = await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
  } catch (err) {
    // Absent: no server recorded itself. ELOOP: a symlink where the record should be is not one.
    // ENOTDIR/EACCES: a state dir we cannot read has no record for us either.
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR' || code === 'EACCES') return undefined;
    throw err;
  }
  let r: unknown;
  try {
    r = JSON.parse(text);
  } catch {
    return undefined; // a torn or foreign file is no record (writes are atomic, so not ours)
  }
  const o = r as Partial<ServerRecord> | null;
  if (!o || typeof o.pid !== 'number' || !Number.isSafeInteger(o.pid) || o.pid <= 0 || typeof o.socket !== 'string' || o.socket === '') return undefined;
  return { pid: o.pid, socket: o.socket, state: String(o.state ?? ''), version: String(o.version ?? ''), startedAt: String(o.startedAt ?? '') };
}

/** Whether a process with `pid` exists (EPERM: it does, as another user's). */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errnoOf(err) === 'EPERM';
  }
}
