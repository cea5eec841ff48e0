// `herrscher-state socket [--state F]`: prints the socket a client would reach by the discovery
// rule when a server answers there (as `watchman get-sockname`), for scripts and bridges that
// take a socket path. Exit 1 when no server answers.
import { connect } from '../client/client.js';
import { describeSource, discoverSocket } from '../transport/discovery.js';
import type { ClientOptions } from './client-options.js';
import { replyTimeoutMs } from './reply-timeout.js';

export async function socket(o: ClientOptions): Promise<number> {
  const found = await discoverSocket({ socket: o.socket, state: o.state });
  try {
    // connect() applies the same rule and the ownership checks; one `status` proves a server answers.
    const client = await connect({ ...o, socket: found.path, callTimeoutMs: replyTimeoutMs() });
    try {
      await client.status();
    } finally {
      await client.close();
    }
  } catch (err) {
    process.stderr.write(`herrscher-state socket: no server answers at ${describeSource(found)}: ${(err as Error).message}\n`);
    return 1;
  }
  process.stdout.write(`${found.path}\n`);
  return 0;
}
