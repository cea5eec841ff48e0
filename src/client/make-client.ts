// The typed client's functions over a ClientCore: one per method of the table, plus call,
// notifications and close. Used by connect() and spawn(); not part of the package's API.
import { functionName } from '../protocol/function-name.js';
import type { CallOptions } from './call-options.js';
import type { StateClient } from './client.js';
import type { ClientCore } from './client-core.js';
import { methodNames } from './method-names.js';
import type { ConnectionState } from './reconnect-options.js';

/**
 * The client's functions over `core`. `state`: the file a client made for one state (connect's
 * `state`, spawn's) names in an `initialize` its caller sends without a `state` of its own.
 */
export function makeClient(core: ClientCore, state?: string): StateClient {
  const call = (method: string, params?: unknown, options?: CallOptions): Promise<unknown> =>
    core.call(method, method === 'initialize' && state !== undefined ? withState(params, state) : params, options);
  const client: Record<string, unknown> = {
    call,
    onNotification: (method: string, handler: (params: unknown) => void) => core.onNotification(method, handler),
    onConnectionState: (listener: (s: ConnectionState) => void) => core.onConnectionState(listener),
    close: () => core.close(),
  };
  Object.defineProperty(client, 'connection', { get: () => core.connection, enumerable: true });
  Object.defineProperty(client, 'closed', { get: () => core.closed, enumerable: true });
  Object.defineProperty(client, 'server', { get: () => core.where, enumerable: true });
  for (const method of methodNames) client[functionName(method)] = (params?: unknown, options?: CallOptions) => call(method, params, options);
  return client as unknown as StateClient;
}

/** initialize's params with `state` added unless the caller gave one (params that are no object are left to the server). */
function withState(params: unknown, state: string): unknown {
  if (params === undefined || params === null) return { state };
  if (typeof params !== 'object' || Array.isArray(params) || (params as { state?: unknown }).state !== undefined) return params;
  return { ...params, state };
}
