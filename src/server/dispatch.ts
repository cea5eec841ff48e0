// Parses a call's params against the method's schema, then runs its handler: the single place
// where the contract meets the store.
import type { MethodName } from '../protocol/table.js';
import { methods } from '../protocol/table.js';
import type { MethodHandler, ServerContext } from './bind.js';
import { handlers } from './bind.js';
import { ResponseError } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../protocol/errors.js';
import { MAX_PARAMS_DEPTH, tooDeep } from './nesting.js';
import { restoreProtoKeys } from './proto-keys.js';
import { invalidParams } from './to-rpc-error.js';

export function isMethodName(name: string): name is MethodName {
  return Object.prototype.hasOwnProperty.call(methods, name);
}

/** Runs `method` with raw params; throws ResponseError(-32602) when they fail the schema. */
export async function dispatch(method: MethodName, rawParams: unknown, ctx: ServerContext): Promise<unknown> {
  const deep = tooDeep(rawParams);
  if (deep !== undefined) {
    const where = deep.length > 0 ? `${deep.join('.')}…` : 'params';
    const message = `params may nest at most ${MAX_PARAMS_DEPTH} levels of arrays and objects. Got more under ${where}`;
    throw new ResponseError(ErrorCodes.InvalidParams, `invalid params: ${message}`, { issues: [{ path: deep, message }] });
  }
  const parsed = methods[method].params.safeParse(rawParams);
  if (!parsed.success) throw invalidParams(parsed.error);
  restoreProtoKeys(rawParams, parsed.data);
  const handler = handlers[method] as MethodHandler<MethodName>;
  return handler(parsed.data as never, ctx);
}
