// Framing failures are the transport's own: they never reach the connection's callback, they are
// answered on the wire, not just logged.
import { ErrorCodes } from '../protocol/error-codes.js';

export type FramingErrorCode =
  | typeof ErrorCodes.ParseError
  | typeof ErrorCodes.InvalidRequest
  | typeof ErrorCodes.MethodNotFound
  | typeof ErrorCodes.MessageTooLarge;

/** What the peer sent wrong, with the code its reply carries; `fatal` ones end the connection. */
export class FramingError extends Error {
  override readonly name = 'FramingError';

  constructor(
    readonly code: FramingErrorCode,
    message: string,
    /** The id of the offending request when it could be read, so the peer can match the reply. */
    readonly id: string | number | null = null,
  ) {
    super(message);
  }

  /** -32040 means the byte stream can no longer be trusted to be in sync: the connection ends. */
  get fatal(): boolean {
    return this.code === ErrorCodes.MessageTooLarge;
  }
}

export interface ErrorResponse {
  jsonrpc: '2.0';
  id: string | number | null;
  error: { code: number; message: string };
}

/** Builds the JSON-RPC error response for a framing failure, without stack or data. */
export function errorResponse(error: FramingError): ErrorResponse {
  return { jsonrpc: '2.0', id: error.id, error: { code: error.code, message: error.message } };
}

/** A -32700 for bytes that are not one JSON value. */
export function parseError(detail: string): FramingError {
  return new FramingError(ErrorCodes.ParseError, `parse error: ${detail}`);
}

/** A -32600 for JSON that is not a JSON-RPC 2.0 message. */
export function invalidRequest(detail: string, id: string | number | null = null): FramingError {
  return new FramingError(ErrorCodes.InvalidRequest, `invalid request: ${detail}`, id);
}

/** A -32601 for a method name no method of ours could have. */
export function methodNotFound(detail: string, id: string | number | null): FramingError {
  return new FramingError(ErrorCodes.MethodNotFound, detail, id);
}

/** A -32040 for a message over the limit or a header we cannot trust. */
export function tooLarge(detail: string): FramingError {
  return new FramingError(ErrorCodes.MessageTooLarge, detail);
}
