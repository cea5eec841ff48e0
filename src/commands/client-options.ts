// How the client commands (call, tail, sessions) reach a running server: the flags they share
// and their parsed form.
import type { Framing } from '../client/client.js';
import { defaultSocketPath } from '../transport/socket.js';
import { UsageError } from './command.js';

export interface ClientOptions {
  /** The server's socket; undefined for the default one. */
  socket?: string;
  framing: Framing;
  /** How long to wait for the socket to accept. */
  timeoutMs: number;
}

export const CLIENT_FLAGS = {
  socket: {
    type: 'string',
    value: 'PATH',
    help: `the server's socket (default: $HERRSCHER_STATE_SOCKET,\nelse ${defaultSocketPath()})`,
  },
  framing: { type: 'string', value: 'lsp|ndjson', default: 'lsp', help: 'wire framing' },
  timeout: { type: 'string', value: 'MS', default: '2000', help: 'how long to wait for the socket to accept' },
} as const;

export function clientOptions(v: { socket?: string | undefined; framing: string; timeout: string }): ClientOptions {
  if (v.framing !== 'lsp' && v.framing !== 'ndjson') throw new UsageError(`--framing must be lsp or ndjson, got ${JSON.stringify(v.framing)}`);
  const timeoutMs = Number(v.timeout);
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw new UsageError(`--timeout must be a number of milliseconds, got ${JSON.stringify(v.timeout)}`);
  return { socket: v.socket ?? process.env.HERRSCHER_STATE_SOCKET, framing: v.framing, timeoutMs };
}
