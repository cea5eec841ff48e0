// The one error the socket layer throws: what went wrong in words a person can act on, and a
// code a program can branch on.

/** The codes a SocketError carries; any other errno name may appear for the rarer failures. */
export const SocketErrorCodes = {
  /** No socket file at the path: no server there (or it stopped). */
  ENOENT: 'ENOENT',
  /** A socket file nobody listens on (left by a crash). */
  ECONNREFUSED: 'ECONNREFUSED',
  /** No permission to connect (another user's socket). */
  EACCES: 'EACCES',
  /** The server did not accept in time. */
  ETIMEDOUT: 'ETIMEDOUT',
  /** The path is longer than a unix socket path may be. */
  ENAMETOOLONG: 'ENAMETOOLONG',
  /** Another live server listens on the path. */
  EADDRINUSE: 'EADDRINUSE',
  /** Something that is not a socket is at the path. */
  EEXIST: 'EEXIST',
  /** The socket or its folder is not ours, or others may write to the folder: refused unsent. */
  EUNSAFE: 'EUNSAFE',
  /** The client named a state file and no server of that state answers (another state's may). */
  ENOSERVER: 'ENOSERVER',
} as const;
export type SocketErrorCode = (typeof SocketErrorCodes)[keyof typeof SocketErrorCodes];

/** A socket failure a person can act on; `code` is one of SocketErrorCodes, or the errno name that caused it. */
export class SocketError extends Error {
  override readonly name = 'SocketError';

  constructor(
    message: string,
    readonly code?: SocketErrorCode | (string & {}),
  ) {
    super(message);
  }
}
