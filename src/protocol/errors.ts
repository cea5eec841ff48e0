// The data and descriptions of the error codes (error-codes.ts), for schema/ and the server.
import * as z from 'zod';
import type { ErrorName } from './error-codes.js';

export { ErrorCodes } from './error-codes.js';
export type { ErrorName, ErrorCode } from './error-codes.js';

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
  StateLocked: z
    .object({
      pid: z.number().int().optional().describe('the holder\'s pid, as its lock file records it'),
      socket: z.string().optional().describe('the socket of the live server that holds it (from its .serving.json record): dial it'),
    })
    .meta({ id: 'StateLockedData' }),
} satisfies Partial<Record<ErrorName, z.ZodType>>;

export const ErrorDescriptions: Record<ErrorName, string> = {
  ParseError: 'The message was not valid JSON.',
  InvalidRequest: 'The message was not a valid JSON-RPC request.',
  MethodNotFound: 'No such method; data.suggestions lists the nearest method names.',
  InvalidParams: 'The params do not match the method schema; data.issues lists them.',
  InternalError: 'An internal error.',
  SessionExists: 'A session with that name exists.',
  UnknownSession: 'No session row has that name.',
  StorageFailure: 'The file system refused the write; data.code is the errno name.',
  ShuttingDown: 'The server is shutting down and accepts no more writes.',
  MessageTooLarge: 'The message exceeds the size limit or its Content-Length is invalid.',
  Conflict: 'The incarnation (state/save: the revision) given is not the current one; data.incarnation (data.revision) is.',
  StateLocked: 'Another process holds this state\'s single-writer lock; data.socket, when present, is its server\'s socket.',
  NotThisState: 'This server does not serve the state named in initialize.',
  RequestCancelled: 'A read cancelled by $/cancelRequest before it was answered (writes are never cancelled).',
};
