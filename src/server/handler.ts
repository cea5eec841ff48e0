// The ends of a request's way through a connection, a chain of CallHandlers (the shape of
// golang.org/x/tools' jsonrpc2 handler chain): `answer` takes the request from vscode-jsonrpc,
// refuses an unknown method and maps what the chain throws to the JSON-RPC error;
// `dispatchHandler` runs the method's own handler. connection.ts composes them once per
// connection as answer → order → gate → cancel → write hold → dispatch (order-, gate-, cancel-
// handler.ts and write-hold.ts between); test/server/handler-chain.test.ts tests each link on its own.
import type { Logger } from 'pino';
import type { CancellationToken } from 'vscode-jsonrpc/node';
import { ResponseError } from 'vscode-jsonrpc/node';
import { nearest } from '../common/edit-distance.js';
import { ErrorCodes } from '../protocol/errors.js';
import type { MethodName } from '../protocol/table.js';
import { methodList, methods } from '../protocol/table.js';
import type { ServerContext } from './bind.js';
import { dispatch, isMethodName } from './dispatch.js';
import { toRpcError } from './to-rpc-error.js';
import type { CallMetrics } from './call-metrics.js';
import { UNKNOWN_METHOD } from './call-metrics.js';

/** One request of a known method. */
export interface Call {
  readonly method: MethodName;
  readonly params: unknown;
  readonly token: CancellationToken;
  /** Whether the method changes the state (the table's `mutates`): writes and reads are ordered apart. */
  readonly write: boolean;
}

/** Answers a call: the result, or a thrown error (a ResponseError, or any other, mapped by `answer`). */
export type CallHandler = (call: Call) => Promise<unknown>;

/** The last handler: the method's own, with its params checked against the contract. */
export function dispatchHandler(ctx: ServerContext): CallHandler {
  return (call) => dispatch(call.method, call.params, ctx);
}

/** The methods a client may call by name: every request of the table (not a notification). */
const callable = methodList.filter((d) => !d.notification).map((d) => d.method);

/** The longest name compared for suggestions: an edit distance costs its length times each method's. */
const SUGGEST_MAX_CHARS = 80;

/** -32601 for `method`, with the nearest method names in its message and in data.suggestions. */
export function unknownMethod(method: string): ResponseError<{ suggestions: string[] }> {
  const suggestions = method.length <= SUGGEST_MAX_CHARS ? nearest(method, callable) : [];
  const hint = suggestions.length > 0 ? `; did you mean ${suggestions.map((s) => JSON.stringify(s)).join(', ')}?` : '; rpc.discover lists every method';
  return new ResponseError(ErrorCodes.MethodNotFound, `unknown method ${JSON.stringify(method)}${hint}`, { suggestions });
}

/** What vscode-jsonrpc calls for a request: a method name from the wire, not yet known to be ours. */
export type RequestHandler = (method: string, params: unknown, token: CancellationToken) => Promise<unknown>;

/**
 * The entry of the chain: refuses an unknown method (-32601), maps whatever the chain throws to
 * the JSON-RPC error the client gets (an unexpected one is logged at error, with the method), and
 * times the request: counted in `metrics` (status), logged at debug.
 */
export function answer(log: Logger, next: CallHandler, metrics?: CallMetrics): RequestHandler {
  return async (method, params, token) => {
    // Seconds as a double, from the clock hrtime reads: hrtime.bigint() allocated a BigInt twice
    // per request, and performance.now() would load perf_hooks before the first reply.
    const started = process.uptime();
    const known = isMethodName(method) && !methods[method].notification;
    const write = known && methods[method].mutates === true;
    let failed = false;
    try {
      if (!known) throw unknownMethod(method);
      return await next({ method, params, token, write });
    } catch (err) {
      failed = true;
      const { error, unexpected } = toRpcError(err);
      if (unexpected) log.error({ err, method }, 'handler failed');
      throw error;
    } finally {
      const us = (process.uptime() - started) * 1e6;
      metrics?.answered(known ? method : UNKNOWN_METHOD, us, failed, write);
      if (log.isLevelEnabled('debug')) log.debug({ method, us }, 'request');
    }
  };
}
