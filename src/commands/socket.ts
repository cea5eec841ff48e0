// `herrscher-state socket [--state F]`: prints the socket a client reaches by the discovery rule
// when a server answers there (as `watchman get-sockname`), for scripts and bridges that take a
// socket path. Exit 1 when no server answers.
import { connect } from '../client/client.js';
import type { FoundSocket } from '../client/client.js';
import { describeSource, discoverSocket } from '../transport/discovery.js';
import type { ClientOptions } from './client-options.js';
import { replyTimeoutMs } from './reply-timeout.js';

export async function socket(o: ClientOptions): Promise<number> {
  let reached: string;
  try {
    // connect() applies the rule, the ownership checks and the state's naming (a StateLocked
    // answer may send it to the state's own server); one `status` proves a server answers.
    const client = await connect({ ...o, callTimeoutMs: replyTimeoutMs() });
    try {
      await client.status();
      // A connect() always reaches a socket: server is set.
      reached = (client.server as FoundSocket).path;
    } finally {
      await client.close();
    }
  } catch (err) {
    const found = await discoverSocket({ socket: o.socket, state: o.state }).catch(() => undefined);
    process.stderr.write(`herrscher-state socket: no server answers${found ? ` at ${describeSource(found)}` : ''}: ${(err as Error).message}\n`);
    return 1;
  }
  process.stdout.write(`${reached}\n`);
  return 0;
}
