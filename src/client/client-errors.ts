// What a call of the TypeScript client can fail with besides the server's own errors
// (ResponseError with a code): the connection ended, or the call outlived its timeout.

/** The connection is gone: the server closed it, died, or sent what a server never sends. */
export class ConnectionClosedError extends Error {
  override readonly name = 'ConnectionClosedError';
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
