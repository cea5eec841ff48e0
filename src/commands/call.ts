// `herrscher-state call METHOD [PARAMS-JSON]`: one request to a running server, for an operator
// at a shell. The result goes to stdout as JSON; an error goes to stderr and the exit code is 1.
import { ResponseError } from 'vscode-jsonrpc';
import { connect } from '../client/client.js';
import type { ClientOptions } from './client-options.js';
import { replyTimeoutMs } from './reply-timeout.js';
import type { MethodName } from '../protocol/table.js';

export interface CallOptions extends ClientOptions {
  method: string;
  params?: string;
}

export async function call(o: CallOptions): Promise<number> {
  let params: unknown = {};
  if (o.params !== undefined) {
    try {
      params = JSON.parse(o.params);
    } catch (err) {
      process.stderr.write(`herrscher-state call: PARAMS-JSON is not JSON: ${(err as Error).message}\n`);
      return 2;
    }
  }
  let client;
  try {
    client = await connect({ ...o, callTimeoutMs: replyTimeoutMs() });
  } catch (err) {
    process.stderr.write(`herrscher-state call: ${(err as Error).message}\n`);
    return 1;
  }
  try {
    const result = await client.call(o.method as MethodName, params as never);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (err) {
    if (err instanceof ResponseError) {
      process.stderr.write(`error ${err.code}: ${err.message}\n`);
      if (err.data !== undefined) process.stderr.write(`${JSON.stringify(err.data, null, 2)}\n`);
    } else {
      process.stderr.write(`herrscher-state call: ${(err as Error).message}\n`);
    }
    return 1;
  } finally {
    await client.close();
  }
}
