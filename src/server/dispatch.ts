// Parses a call's params against the method's schema, then runs its handler: the single place
// where the contract meets the store. A check derived from the schema (protocol/derived-check.ts)
// answers first; what it cannot vouch for, valid or not, is zod's.
import type { MethodName } from '../protocol/table.js';
import { methods } from '../protocol/table.js';
import type { MethodHandler, ServerContext } from './bind.js';
import { handlers } from './bind.js';
import { ResponseError } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../protocol/errors.js';
import { MAX_PARAMS_DEPTH, tooDeep } from './nesting.js';
import { restoreProtoKeys } from './proto-keys.js';
import { invalidParams } from './to-rpc-error.js';
import type { DerivedCheck } from '../protocol/derived-check.js';
import { deriveCheck, UNDECIDED } from '../protocol/derived-check.js';

export function isMethodName(name: string): name is MethodName {
  return Object.prototype.hasOwnProperty.call(methods, name);
}

/** Per method, the check derived from its params' schema at its first call (null: none derives). */
const derived = new Map<MethodName, DerivedCheck | null>();

function derivedCheckOf(method: MethodName): DerivedCheck | null {
  let check = derived.get(method);
  if (check === undefined) derived.set(method, (check = deriveCheck(methods[method].params) ?? null));
  return check;
}

/** Runs `method` with raw params; throws ResponseError(-32602) when they fail the schema. */
export async function dispatch(method: MethodName, rawParams: unknown, ctx: ServerContext): Promise<unknown> {
  const handler = handlers[method] as MethodHandler<MethodName>;
  // Params it accepts are strict objects of non-object values, as deep as their schema, with no
  // key but the schema's: the depth bound and the "__proto__" repair below have nothing to do.
  const fast = derivedCheckOf(method)?.(rawParams) ?? UNDECIDED;
  if (fast !== UNDECIDED) return await handler(fast as never, ctx);
  const deep = tooDeep(rawParams);
  if (deep !== undefined) {
    const where = deep.length > 0 ? `${deep.join('.')}…` : 'params';
    const message = `params may nest at most ${MAX_PARAMS_DEPTH} levels of arrays and objects. Got more under ${where}`;
    throw new ResponseError(ErrorCodes.InvalidParams, `invalid params: ${message}`, { issues: [{ path: deep, message }] });
  }
  const parsed = methods[method].params.safeParse(rawParams);
  if (!parsed.success) throw invalidParams(parsed.error);
  restoreProtoKeys(rawParams, parsed.data);
  return handler(parsed.data as never, ctx);
}
