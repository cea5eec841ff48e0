// The client side of every measurement: the project's own typed client and framed transport
// (what a TypeScript bridge runs), used unchanged against our server and against the bare echo
// server, which answers the same method names. Same bytes out, same client CPU: the ratio is
// the server's.
import net from 'node:net';
import { createMessageConnection } from 'vscode-jsonrpc/node';
import type { StateClient } from '../../src/client/client.js';
import { connect } from '../../src/client/client.js';
import { createFramedTransport } from '../../src/transport/framing.js';

/** A connection reduced to what the load patterns need. */
export interface Rpc {
  request(method: string, params: unknown): Promise<unknown>;
  close(): Promise<void>;
}

/** A typed client on a unix socket; `timeoutMs` covers a server still starting. */
export function connectClient(socket: string): Promise<StateClient> {
  return connect({ socket, framing: 'lsp', timeoutMs: 10_000 });
}

/** Any typed client as an Rpc: `call` is `connection.sendRequest`, so this adds nothing. */
export function asRpc(client: StateClient): Rpc {
  return {
    request: (method, params) => client.connection.sendRequest(method, params),
    close: () => client.close(),
  };
}

export async function connectRpc(socket: string): Promise<Rpc> {
  return asRpc(await connectClient(socket));
}

/** An Rpc on a fresh unix socket connection with the typed client's transport, nothing sent yet (no initialize). */
export async function rpcOverSocket(socketPath: string): Promise<Rpc> {
  const socket = net.createConnection(socketPath);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const t = createFramedTransport(socket, socket, { maxMessageBytes: 64 * 1024 * 1024, initialFraming: 'lsp' });
  const connection = createMessageConnection(t.reader, t.writer);
  connection.onClose(() => connection.dispose());
  connection.listen();
  return {
    request: (method, params) => connection.sendRequest(method, params),
    close: async () => {
      connection.dispose();
      socket.end();
    },
  };
}

/**
 * An Rpc over a child's stdio with the transport the typed client's spawn() uses. The bench
 * spawns children itself because --cpu-prof cannot travel in NODE_OPTIONS.
 */
export function rpcOverStdio(stdout: NodeJS.ReadableStream, stdin: NodeJS.WritableStream): Rpc {
  const t = createFramedTransport(stdout, stdin, { maxMessageBytes: 64 * 1024 * 1024, initialFraming: 'lsp' });
  const connection = createMessageConnection(t.reader, t.writer);
  // As the typed client: a peer that exits rejects pending calls instead of hanging the bench.
  connection.onClose(() => connection.dispose());
  connection.listen();
  return {
    request: (method, params) => connection.sendRequest(method, params),
    close: async () => {
      connection.dispose();
      stdin.end();
    },
  };
}
