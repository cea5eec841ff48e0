// The store's one error type. It knows no RPC numbers: server/to-rpc-error.ts maps `kind` to the
// wire. Messages name files relative to the state dir, never by absolute path.

export type StoreErrorKind =
  | 'exists' // session/add of a taken name
  | 'unknown-session' // an append or read for a name with no session row
  | 'invalid-name' // a name that is not one safe path component, or breaks the session-name rule
  | 'invalid-input' // a value the files cannot hold (NaN cost, CR/LF in a participant id…)
  | 'conflict' // an incarnation guard that no longer matches
  | 'io' // the file system refused; `code` is the errno name (ENOSPC, EACCES…)
  | 'locked' // another process holds the state file's lock
  | 'binding' // the flock binding does not load in this runtime (only at open: no request meets it)
  | 'closed'; // the store is shutting down

export class StoreError extends Error {
  constructor(
    readonly kind: StoreErrorKind,
    message: string,
    readonly data?: Record<string, unknown>,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}

/** Wraps a file-system error with the action and a state-dir-relative file name. */
export function ioError(action: string, relPath: string, err: unknown): StoreError {
  if (err instanceof StoreError) return err; // already names its file and action
  const e = err as NodeJS.ErrnoException;
  const code = typeof e?.code === 'string' ? e.code : 'EIO';
  const reason = describeErrno(code, e);
  return new StoreError('io', `${action} ${relPath}: ${code}: ${reason}`, { code }, code);
}

function describeErrno(code: string, e: NodeJS.ErrnoException | undefined): string {
  // Node's messages repeat the absolute path after a comma: keep only the reason before it.
  const m = /^[A-Z0-9_]+: ([^,]+)/.exec(e?.message ?? '');
  return m?.[1] ?? code.toLowerCase();
}
