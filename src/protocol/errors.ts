// Every error code a reply may carry, by name. The reserved JSON-RPC range first, then ours
// (-32010…-32050, inside the implementation-defined server-error range -32000…-32099).
import { z } from 'zod';

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
  /** LSP's RequestCancelled: a read cancelled by `$/cancelRequest` before it was answered. */
  RequestCancelled: -32800,
} as const;

export type ErrorName = keyof typeof ErrorCodes;
export type ErrorCode = (typeof ErrorCodes)[ErrorName];

/** The `data` each error carries, where it carries any. */
export const ErrorData = {
  InvalidParams: z
    .object({ issues: z.array(z.object({ path: z.array(z.union([z.string(), z.number()])), message: z.string() })) })
    .meta({ id: 'InvalidParamsData' }),
  StorageFailure: z.object({ code: z.string().describe('errno name, e.g. ENOSPC') }).meta({ id: 'StorageFailureData' }),
  Conflict: z
    .object({
      incarnation: z.string().nullable().optional().describe('the current incarnation; null when the row is gone (absent for state/save)'),
      revision: z.number().int().optional().describe('state/save: the current state revision (absent for an incarnation conflict)'),
    })
    .meta({ id: 'ConflictData' }),
} satisfies Partial<Record<ErrorName, z.ZodType>>;

export const ErrorDescriptions: Record<ErrorName, string> = {
  ParseError: 'The message was not valid JSON.',
  InvalidRequest: 'The message was not a valid JSON-RPC request.',
  MethodNotFound: 'No such method.',
  InvalidParams: 'The params do not match the method schema; data.issues lists them.',
  InternalError: 'An internal error.',
  SessionExists: 'A session with that name exists.',
  UnknownSession: 'No session row has that name.',
  StorageFailure: 'The file system refused the write; data.code is the errno name.',
  ShuttingDown: 'The server is shutting down and accepts no more writes.',
  MessageTooLarge: 'The message exceeds the size limit or its Content-Length is invalid.',
  Conflict: 'The incarnation (state/save: the revision) given is not the current one; data.incarnation (data.revision) is.',
  RequestCancelled: 'A read cancelled by $/cancelRequest before it was answered (writes are never cancelled).',
};
