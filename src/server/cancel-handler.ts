// Cancellation of reads (`$/cancelRequest`): -32800, as LSP. A read is cancelled while it waits
// (behind writes, at the read gate) or, once it ran, by not sending the reply the client gave up
// on. A write is never cancelled once received: it is queued in arrival order with the writes
// around it and applied, and its answer says so.
import type { CancellationToken } from 'vscode-jsonrpc/node';
import { ResponseError } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../protocol/errors.js';
import type { CallHandler } from './handler.js';

export function cancelled(): ResponseError<unknown> {
  return new ResponseError(ErrorCodes.RequestCancelled, 'request cancelled by $/cancelRequest before it was answered');
}

/** Waits for `p`, or rejects with -32800 as soon as the request is cancelled. */
export function cancellable(p: Promise<void>, token: CancellationToken): Promise<void> {
  if (token.isCancellationRequested) return Promise.reject(cancelled());
  return new Promise((resolve, reject) => {
    const listener = token.onCancellationRequested(() => reject(cancelled()));
    p.then(
      () => {
        listener.dispose();
        resolve();
      },
      (err: unknown) => {
        listener.dispose();
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

/** A read cancelled before or while it ran is answered -32800 instead of its result; a write passes straight on. */
export function cancelHandler(next: CallHandler): CallHandler {
  const read: CallHandler = async (call) => {
    if (call.token.isCancellationRequested) throw cancelled();
    const result = await next(call);
    if (call.token.isCancellationRequested) throw cancelled();
    return result;
  };
  return (call) => (call.write ? next(call) : read(call));
}
