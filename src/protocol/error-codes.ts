// Every error code a reply may carry, by name. The reserved JSON-RPC range first, then ours
// (-32010…-32061, inside the implementation-defined server-error range -32000…-32099).
// Apart from their zod-described data (errors.ts) so the client loads no zod.

export const ErrorCodes = {
  /** The bytes were not JSON (answered with id null; the connection goes on). */
  ParseError: -32700,
  /** Not a JSON-RPC request object (an array, a missing method, a bad id…). */
  InvalidRequest: -32600,
  /** No such method. */
  MethodNotFound: -32601,
  /** Params fail the method's schema; `data.issues` lists `{path, message}`. */
  InvalidParams: -32602,
  /** A bug on our side; the message carries no stack or path. */
  InternalError: -32603,
  /** session/add of a name that is taken. */
  SessionExists: -32010,
  /** An append for a name that has no session row. */
  UnknownSession: -32011,
  /** The file system refused; `data.code` is the errno name (ENOSPC, EACCES, EIO…). */
  StorageFailure: -32020,
  /** After `shutdown`: no more writes. */
  ShuttingDown: -32030,
  /** A message over --max-message-bytes or a garbled Content-Length; the connection is closed. */
  MessageTooLarge: -32040,
  /** The incarnation given is not the session's current one; `data.incarnation` is (null: gone). */
  Conflict: -32050,
  /** Another process holds this state's single-writer lock; `data`: `{pid?, socket?}` (socket: its server's, to dial). */
  StateLocked: -32060,
  /** This server does not serve the state named (initialize's `state`); the message names both paths. */
  NotThisState: -32061,
  /** LSP's RequestCancelled: a read cancelled by `$/cancelRequest` before it was answered. */
  RequestCancelled: -32800,
} as const;

export type ErrorName = keyof typeof ErrorCodes;
export type ErrorCode = (typeof ErrorCodes)[ErrorName];
