// How the client commands (call, tail, sessions) reach a running server: the flags they share
// and their parsed form.
import type { Framing } from '../client/client.js';
import { defaultSocketPath, sharedSocketPath } from '../transport/socket.js';
import { UsageError } from './command.js';
import { timerMs } from './reply-timeout.js';

export interface ClientOptions {
  /** The server's socket; undefined to find it by the discovery rule (transport/discovery.ts). */
  socket?: string;
  /** The state file whose server to find when no socket is given (--state). */
  state?: string;
  framing: Framing;
  /** How long to wait for the socket to accept. */
  timeoutMs: number;
  /** --timeout as given (undefined when absent), for a command that bounds more than the connect. */
  givenTimeoutMs?: number;
}

/** How long a client command waits for the socket to accept, unless --timeout says. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 2000;

export const CLIENT_FLAGS = {
  socket: {
    type: 'string',
    value: 'PATH',
    help: `the server's socket (default: $HERRSCHER_STATE_SOCKET, else the socket\nthe live server of --state recorded, else the shared server's\n${sharedSocketPath()} when it exists, else ${defaultSocketPath()})`,
  },
  state: {
    type: 'string',
    value: 'FILE',
    help: 'the state.json to work on: its own server\'s, else the shared server\'s\n(default: as serve decides it; on the shared server, the default state)',
  },
  framing: { type: 'string', value: 'lsp|ndjson', default: 'lsp', help: 'wire framing' },
  timeout: {
    type: 'string',
    value: 'MS',
    help: `call, and status when given: how long the whole request may take, connecting\nand the reply (call's default $HERRSCHER_STATE_REPLY_TIMEOUT_MS, else 30000); the others:\nhow long to wait for the socket to accept (default ${DEFAULT_CONNECT_TIMEOUT_MS})`,
  },
} as const;

export function clientOptions(v: { socket?: string | undefined; state?: string | undefined; framing: string; timeout?: string | undefined }): ClientOptions {
  if (v.framing !== 'lsp' && v.framing !== 'ndjson') throw new UsageError(`--framing must be lsp or ndjson, got ${JSON.stringify(v.framing)}`);
  // Number('') is 0: an empty value (an unset shell variable) is no number, not "give up at once".
  const asked = v.timeout === undefined ? undefined : v.timeout.trim() === '' ? NaN : Number(v.timeout);
  if (asked !== undefined && (!Number.isFinite(asked) || asked < 0)) throw new UsageError(`--timeout must be a number of milliseconds, got ${JSON.stringify(v.timeout)}`);
  const given = asked === undefined ? undefined : timerMs(asked);
  // The rest of the rule ($HERRSCHER_STATE_SOCKET, the record, the default) is connect()'s.
  return { socket: v.socket, state: v.state, framing: v.framing, timeoutMs: given ?? DEFAULT_CONNECT_TIMEOUT_MS, givenTimeoutMs: given };
}
