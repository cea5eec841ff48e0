// `herrscher-state backup DEST`: asks the running server for a backup (the `backup` method, which
// writes DEST itself: docs/operations.md says why), or, when no server runs, opens the state as
// `serve` would (its locks, so no server starts meanwhile; a crash's write-ahead log replayed)
// and copies it the same way. Such a copy is at no server run's revision: it says `offline` and
// names none. `--json` prints one shape for both, with `offline`.
import { access } from 'node:fs/promises';
import path from 'node:path';
import { connect } from '../client/client.js';
import type { StateClient } from '../client/client.js';
import type { BackupResult, OfflineBackupResult } from '../store/backup.js';
import { describeBackup } from '../store/backup-manifest.js';
import { SocketError } from '../transport/socket.js';
import type { ClientOptions } from './client-options.js';
import { EXIT } from './command.js';
import { replyTimeoutMs } from './reply-timeout.js';
import { defaultStatePath } from './state-path.js';

/** How long the reply may take unless $HERRSCHER_STATE_REPLY_TIMEOUT_MS says: a copy of gigabytes takes a while. */
const BACKUP_REPLY_TIMEOUT_MS = 3_600_000;

/** What connect() fails with when nothing serves there. */
const NO_SERVER = new Set(['ENOENT', 'ECONNREFUSED', 'ENOSERVER']);

export async function backup(o: ClientOptions & { json: boolean; dest: string }): Promise<number> {
  const dest = path.resolve(o.dest);
  const callTimeoutMs = Number(process.env.HERRSCHER_STATE_REPLY_TIMEOUT_MS) > 0 ? replyTimeoutMs() : BACKUP_REPLY_TIMEOUT_MS;
  let client: StateClient | undefined;
  try {
    client = await connect({ socket: o.socket, state: o.state, framing: o.framing, timeoutMs: o.timeoutMs, callTimeoutMs });
  } catch (err) {
    const explicit = o.socket !== undefined || process.env.HERRSCHER_STATE_SOCKET;
    if (!(err instanceof SocketError) || !NO_SERVER.has(err.code ?? '') || explicit) throw err;
  }
  let result: (BackupResult & { offline: false }) | OfflineBackupResult;
  let how: string;
  if (client) {
    try {
      result = { ...(await client.backup({ dest })), offline: false };
    } finally {
      await client.close();
    }
    how = 'from the running server';
  } else {
    const copied = await offline(o.state ?? defaultStatePath(), dest);
    if (typeof copied === 'string') {
      process.stderr.write(`herrscher-state backup: ${copied}\n`);
      return EXIT.locked;
    }
    result = copied;
    how = 'copied under its lock';
  }
  process.stdout.write(o.json ? `${JSON.stringify(result, null, 2)}\n`
    : `backup ${describeBackup(result)}, ${how}: ${result.files} files, ${result.bytes} bytes in ${result.dest}\n`);
  return 0;
}

/** The backup, or why the lock could not be taken (a server holds it, yet did not answer where it was looked for). */
async function offline(state: string, dest: string): Promise<OfflineBackupResult | string> {
  const statePath = path.resolve(state);
  try {
    await access(path.dirname(statePath));
  } catch {
    throw new Error(`no server answers for ${statePath}, and its folder does not exist: nothing to back up`);
  }
  const { Store } = await import('../store/store.js');
  const { backupOffline } = await import('../store/backup.js');
  const say = (message: string, err?: unknown): void => {
    process.stderr.write(`herrscher-state backup: ${message}${err ? `: ${(err as Error).message}` : ''}\n`);
  };
  // As `serve` opens it: both locks (a server that starts meanwhile is refused), the log replayed.
  const { StoreError } = await import('../store/store-error.js');
  let store;
  try {
    store = await Store.open(statePath, { durability: 'write', warn: say, error: say });
  } catch (err) {
    if (!(err instanceof StoreError) || err.kind !== 'locked') throw err;
    return `${err.message}; it did not answer where its socket was looked for: pass its --socket PATH`;
  }
  try {
    return await backupOffline(store, dest);
  } finally {
    await store.close();
  }
}
