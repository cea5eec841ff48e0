// How the client commands (call, tail, sessions) reach a running server: the flags they share
// and their parsed form.
import type { Framing } from '../client/client.js';
import { defaultSocketPath } from '../transport/socket.js';
import { UsageError } from './command.js';

export interface ClientOptions {
  /** The server's socket; undefined to find it by the discovery rule (transport/discovery.ts). */
  socket?: string;
  /** The state file whose server to find when no socket is given (--state). */
  state?: string;
  framing: Framing;
  /** How long to wait for the socket to accept. */
  timeoutMs: number;
}

export const CLIENT_FLAGS = {
  socket: {
    type: 'string',
    value: 'PATH',
    help: `the server's socket (default: $HERRSCHER_STATE_SOCKET, else the socket\nthe live server of --state recorded, else ${defaultSocketPath()})`,
  },
  state: {
    type: 'string',
    value: 'FILE',
    help: 'find the server of this state.json (default: as serve decides it)',
  },
  framing: { type: 'string', value: 'lsp|ndjson', default: 'lsp', help: 'wire framing' },
  timeout: { type: 'string', value: 'MS', default: '2000', help: 'how long to wait for the socket to accept' },
} as const;

export function clientOptions(v: { socket?: string | undefined; state?: string | undefined; framing: string; timeout: string }): ClientOptions {
  if (v.framing !== 'lsp' && v.framing !== 'ndjson') throw new UsageError(`--framing must be lsp or ndjson, got ${JSON.stringify(v.framing)}`);
  const timeoutMs = Number(v.timeout);
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw new UsageError(`--timeout must be a number of milliseconds, got ${JSON.stringify(v.timeout)}`);
  // The rest of the rule ($HERRSCHER_STATE_SOCKET, the record, the default) is connect()'s.
  return { socket: v.socket, state: v.state, framing: v.framing, timeoutMs };
}
