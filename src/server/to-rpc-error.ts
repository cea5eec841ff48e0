// The one mapping from anything a handler throws to a JSON-RPC error. Store errors map by kind;
// anything else is a bug: logged with its stack by the caller, answered -32603 with neither
// stack nor path.
import { ResponseError } from 'vscode-jsonrpc';
import type * as z from 'zod';
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
  locked: ErrorCodes.StateLocked,
  binding: ErrorCodes.StorageFailure,
  closed: ErrorCodes.ShuttingDown,
};

/** Zod issues as `[{path, message}]`, paths flattened to strings and numbers (symbols dropped). */
export function issuesOf(error: z.ZodError): { path: (string | number)[]; message: string }[] {
  return error.issues.map((i) => ({
    path: i.path.filter((x): x is string | number => typeof x !== 'symbol'),
    message: i.message,
  }));
}

/** Issues listed in an error's `data`: the message counts the rest ("and N more"). */
export const MAX_LISTED_ISSUES = 50;

export function invalidParams(error: z.ZodError): ResponseError<unknown> {
  const issues = issuesOf(error);
  const first = issues[0];
  const where = first && first.path.length ? `${first.path.join('.')}: ` : '';
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
  return new ResponseError(ErrorCodes.InvalidParams, `invalid params: ${where}${first?.message ?? 'invalid'}${more}`, { issues: issues.slice(0, MAX_LISTED_ISSUES) });
}

/** Maps a thrown value to a wire error; `unexpected` is true for what must be logged as a bug. */
export function toRpcError(err: unknown): { error: ResponseError<unknown>; unexpected: boolean } {
  if (err instanceof ResponseError) return { error: boundedError(err.code, err.message, err.data), unexpected: false };
  if (err instanceof StoreError) {
    const code = byKind[err.kind];
    const data =
      err.kind === 'invalid-name' || err.kind === 'invalid-input'
        ? { issues: [{ path: err.kind === 'invalid-name' ? ['name'] : [], message: err.message }] }
        : err.data;
    return { error: boundedError(code, err.message, data), unexpected: false };
  }
  return { error: new ResponseError(ErrorCodes.InternalError, 'internal error'), unexpected: true };
}

/**
 * An error reply quotes what the caller sent (an unknown key or method, a path) so it can be
 * recognised, never in full: one 60 MB key, echoed in the message and again in `data`, made
 * each such reply 120 MB that a client which never reads left in memory. Every quoted string of
 * the message, every string of `data` (paths included) and the message as a whole are cut.
 */
export function boundedError(code: number, message: string, data: unknown): ResponseError<unknown> {
  return new ResponseError(code, boundMessage(message), data === undefined ? undefined : boundStrings(data, 0));
}

/** Characters of one echoed string kept in an error reply, "…" marking the cut. */
export const MAX_ECHOED_CHARS = 200;
/** Characters of an error message in all (its quoted strings already cut). */
export const MAX_ERROR_MESSAGE_CHARS = 2000;
/** How deep `data` is walked: what the server builds is a few levels; deeper is cut. */
const MAX_DATA_DEPTH = 8;

const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}…` : text);

/** A JSON string literal inside a message: `"…"` with its escapes. */
const QUOTED = /"(?:[^"\\]|\\.)*"/g;

function boundMessage(message: string): string {
  if (message.length <= MAX_ECHOED_CHARS) return message;
  const quotedCut = message.replace(QUOTED, (q) => (q.length > MAX_ECHOED_CHARS + 2 ? `${q.slice(0, MAX_ECHOED_CHARS + 1)}…"` : q));
  return cut(quotedCut, MAX_ERROR_MESSAGE_CHARS);
}

function boundStrings(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return depth === 0 ? boundMessage(value) : cut(value, MAX_ECHOED_CHARS);
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_DATA_DEPTH) return null;
  if (Array.isArray(value)) return value.slice(0, MAX_LISTED_ISSUES).map((v) => boundStrings(v, depth + 1));
  const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of Object.entries(value)) out[cut(k, MAX_ECHOED_CHARS)] = k === 'message' && typeof v === 'string' ? boundMessage(v) : boundStrings(v, depth + 1);
  return out;
}
