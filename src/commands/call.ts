// `herrscher-state call METHOD [PARAMS-JSON]`: one request to a running server, for an operator
// at a shell. The result goes to stdout as JSON; an error goes to stderr and the exit code is 1.
import { ResponseError } from 'vscode-jsonrpc';
import { connect } from '../client/client.js';
import { answeredBy } from './answered-by.js';
import type { ClientOptions } from './client-options.js';
import { deadline } from './deadline.js';
import { replyTimeoutMs } from './reply-timeout.js';
import type { MethodName } from '../protocol/table.js';

export interface CallOptions extends ClientOptions {
  method: string;
  params?: string;
  /** The bound on the whole request: finding and connecting to the server, and its reply. */
  requestTimeoutMs: number;
}

/** Codes vscode-jsonrpc gives a request on the client side, never sent by a server. */
const CLIENT_SIDE_CODES: Record<number, string> = {
  [-32099]: 'the request could not be written to the server',
  [-32098]: 'the reply could not be read',
  [-32097]: 'the connection closed before the server answered',
  [-32096]: 'the connection was already closed',
};

export async function call(o: CallOptions): Promise<number> {
  let params: unknown = {};
  if (o.params !== undefined) {
    try {
      params = JSON.parse(o.params);
    } catch (err) {
      process.stderr.write(`herrscher-state call: PARAMS-JSON is not JSON: ${(err as Error).message}\n`);
      return 2;
    }
    // JSON-RPC params are an object (or an array); a bare string or number sent wrapped in an
    // array would get the server's answer "expected object, received array", naming what the
    // user never wrote.
    if (params !== null && typeof params !== 'object') {
      process.stderr.write(`herrscher-state call: PARAMS-JSON must be a JSON object, e.g. '{"name":"main"}', got a ${typeof params}\n`);
      return 2;
    }
  }
  const limit = deadline(o.requestTimeoutMs);
  const connecting = connect({ ...o, callTimeoutMs: replyTimeoutMs() });
  let client;
  try {
    client = await Promise.race([connecting, limit.expired]);
  } catch (err) {
    limit.cancel();
    // A connection that arrives after the deadline is closed, so that the process can exit.
    void connecting.then((c) => c.close(), () => undefined);
    process.stderr.write(`herrscher-state call: ${(err as Error).message}\n`);
    return 1;
  }
  try {
    const result = await Promise.race([client.call(o.method as MethodName, params as never), limit.expired]);
    // An operator's `call shutdown` means "stop": LSP's shutdown only refuses writes and waits
    // for `exit`, which a one-shot call would never send, leaving the server running but useless.
    if (o.method === 'shutdown') await client.call('exit');
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof ResponseError && CLIENT_SIDE_CODES[err.code] !== undefined) {
      process.stderr.write(`herrscher-state call: ${CLIENT_SIDE_CODES[err.code]} (client-side error ${err.code}: ${err.message})\n`);
    } else if (err instanceof ResponseError) {
      process.stderr.write(`error ${err.code}: ${err.message}\n`);
      if (err.data !== undefined) process.stderr.write(`${JSON.stringify(err.data, null, 2)}\n`);
      const by = answeredBy(client);
      if (by !== undefined) process.stderr.write(`(${by})\n`);
    } else {
      process.stderr.write(`herrscher-state call: ${(err as Error).message}\n`);
    }
    return 1;
  } finally {
    limit.cancel();
    await client.close();
  }
}
