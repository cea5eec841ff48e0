// A server that cannot start says so in one line a person can act on: what failed, on which
// file, what to do. The stack goes to the log at debug only; a --log-file also gets the fatal
// record (stderr already has the line, so it is not repeated there).
import { StoreError } from '../store/store-error.js';
import { SocketError } from '../transport/socket.js';
import type { Logging } from './logger.js';
import { EXIT } from './command.js';

/** What to do about a store that cannot be opened, by what went wrong. */
function storeHint(err: StoreError, state: string): string {
  if (err.kind === 'locked') return 'stop that process, or pass another --state';
  if (err.kind === 'binding') return 'run the server with Node 20 or later (from Electron: a node on PATH, or spawn({ node }))';
  if (err.kind === 'invalid-input') return `fix ${state} or move it away (it was left untouched)`;
  if (err.code === 'EACCES' || err.code === 'EPERM') return `check that this user may read and write the folder of ${state}`;
  if (err.code === 'ENOSPC' || err.code === 'EDQUOT') return 'free some space on that disk';
  return `check ${state} and its folder`;
}

function socketHint(err: SocketError): string {
  if (err.code === 'EADDRINUSE') return 'another server listens there: stop it, or pass another --socket';
  if (err.code === 'ENOENT') return 'create its folder first, or pass another --socket';
  if (err.code === 'EACCES' || err.code === 'EPERM') return 'pass a --socket in a folder this user may write';
  if (err.code === 'EUNSAFE') return 'pass a --socket in a folder of this user that only it may write (e.g. made with mkdir -m 700)';
  return 'pass another --socket';
}

/** The one line, e.g. `cannot open the state /x/custom.json: custom.json: … (fix … or move it away)`. */
export function startFailureLine(what: 'state' | 'socket', target: string, err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  if (what === 'state') {
    const hint = err instanceof StoreError ? storeHint(err, target) : `check ${target} and its folder`;
    return `cannot open the state ${target}: ${message}; ${hint}`;
  }
  const hint = err instanceof SocketError ? socketHint(err) : 'pass another --socket';
  return `cannot listen on ${target}: ${message}; ${hint}`;
}

/** Reports a failed start (one stderr line, the stack at debug) and exits: EXIT.locked when another process holds the state's lock, else 1. */
export function exitOnStartFailure(logging: Logging, what: 'state' | 'socket', target: string, err: unknown): never {
  const line = startFailureLine(what, target, err);
  logging.log.debug({ err }, line);
  if (logging.toFile) logging.log.fatal({ code: (err as { code?: unknown }).code }, line);
  logging.flush();
  process.stderr.write(`herrscher-state: ${line}\n`);
  process.exit(err instanceof StoreError && err.kind === 'locked' ? EXIT.locked : EXIT.failed);
}
