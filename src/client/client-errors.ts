// What a call of the TypeScript client can fail with besides the server's own errors
// (ResponseError with a code): the connection ended, or the call outlived its timeout.

/** The connection is gone: the server closed it, died, or sent what a server never sends. */
export class ConnectionClosedError extends Error {
  override readonly name: string = 'ConnectionClosedError';
  readonly code = 'ECONNCLOSED';
}

/**
 * The call was not answered within its timeout. Its `$/cancelRequest` was sent; a write may still
 * be applied (the server never drops an accepted write), so check before sending it again.
 */
export class CallTimeoutError extends Error {
  override readonly name = 'CallTimeoutError';
  readonly code = 'ETIMEDOUT';
}

/**
 * A spawned server exited before it answered anything: it could not start (a state.json that is
 * not JSON, a folder it may not use, a lock another process holds…). Every call, pending or
 * later, rejects with it. `stderr` holds the last lines the server wrote there, which say why;
 * the message repeats the last of them. A ConnectionClosedError too: the connection is gone.
 */
export class StartError extends ConnectionClosedError {
  override readonly name = 'StartError';
  constructor(
    message: string,
    /** The server's exit code, or null when a signal ended it. */
    readonly exitCode: number | null,
    /** The signal that ended it, or null. */
    readonly signal: NodeJS.Signals | null,
    /** The last lines the server wrote to stderr (at most START_ERROR_STDERR_LINES), oldest first. */
    readonly stderr: readonly string[],
  ) {
    super(message);
  }
}

/** How many of a failed server's last stderr lines a StartError keeps. */
export const START_ERROR_STDERR_LINES = 20;

/** The error for a call on a connection that ended with `reason`: a start failure stays one. */
export function closedError(reason: Error): ConnectionClosedError {
  return reason instanceof StartError ? new StartError(reason.message, reason.exitCode, reason.signal, reason.stderr) : new ConnectionClosedError(reason.message);
}
