// The one mapping from anything a handler throws to a JSON-RPC error. Store errors map by kind;
// anything else is a bug: logged with its stack by the caller, answered -32603 with neither
// stack nor path.
import { ResponseError } from 'vscode-jsonrpc';
import type { z } from 'zod';
import { ErrorCodes } from '../protocol/errors.js';
import type { StoreErrorKind } from '../store/store-error.js';
import { StoreError } from '../store/store-error.js';

const byKind: Record<StoreErrorKind, number> = {
  exists: ErrorCodes.SessionExists,
  'unknown-session': ErrorCodes.UnknownSession,
  'invalid-name': ErrorCodes.InvalidParams,
  'invalid-input': ErrorCodes.InvalidParams,
  conflict: ErrorCodes.Conflict,
  io: ErrorCodes.StorageFailure,
  locked: ErrorCodes.StorageFailure,
  closed: ErrorCodes.ShuttingDown,
};

/** Zod issues as `[{path, message}]`, paths flattened to strings and numbers (symbols dropped). */
export function issuesOf(error: z.ZodError): { path: (string | number)[]; message: string }[] {
  return error.issues.map((i) => ({
    path: i.path.filter((x): x is string | number => typeof x !== 'symbol'),
    message: i.message,
  }));
}

export function invalidParams(error: z.ZodError): ResponseError<unknown> {
  const issues = issuesOf(error);
  const first = issues[0];
  const where = first && first.path.length ? `${first.path.join('.')}: ` : '';
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return new ResponseError(ErrorCodes.InvalidParams, `invalid params: ${where}${first?.message ?? 'invalid'}${more}`, { issues });
}

/** Maps a thrown value to a wire error; `unexpected` is true for what must be logged as a bug. */
export function toRpcError(err: unknown): { error: ResponseError<unknown>; unexpected: boolean } {
  if (err instanceof ResponseError) return { error: err, unexpected: false };
  if (err instanceof StoreError) {
    const code = byKind[err.kind];
    const data =
      err.kind === 'invalid-name' || err.kind === 'invalid-input'
        ? { issues: [{ path: err.kind === 'invalid-name' ? ['name'] : [], message: err.message }] }
        : err.data;
    return { error: new ResponseError(code, err.message, data), unexpected: false };
  }
  return { error: new ResponseError(ErrorCodes.InternalError, 'internal error'), unexpected: true };
}
