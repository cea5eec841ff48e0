// The error a call rejects with when the server answers with an error: vscode-jsonrpc's
// ResponseError at run time (the class its connection creates, so `instanceof` holds for either
// import), declared here in our own terms so the client's published types name no dependency.
import { ResponseError as JsonRpcResponseError } from 'vscode-jsonrpc';

/** The server's error reply: its JSON-RPC `code` (see ErrorCodes), `message` and `data`. */
export interface ResponseError<D = unknown> extends Error {
  readonly code: number;
  readonly data: D | undefined;
  toJson(): { code: number; message: string; data?: D };
}

export interface ResponseErrorConstructor {
  new <D = unknown>(code: number, message: string, data?: D): ResponseError<D>;
  readonly prototype: ResponseError;
}

export const ResponseError: ResponseErrorConstructor = JsonRpcResponseError as unknown as ResponseErrorConstructor;
