// An in-process server on a real unix socket for the wire attack cases: the real StateServer and
// transport, wired as `serve` wires them, in a temp dir of its own; closed when the test ends.
import path from 'node:path';
import pino from 'pino';
import type { ServerConnection } from '../../src/server/connection.js';
import { StateServer } from '../../src/server/server.js';
import type { Store } from '../../src/store/store.js';
import type { FramedTransportOptions } from '../../src/transport/framing.js';
import { createFramedTransport } from '../../src/transport/framing.js';
import { listenUnixSocket } from '../../src/transport/socket.js';
import { openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';
import type { Framing, RawClient } from '../helpers/wire.js';
import { connectRaw } from '../helpers/wire.js';
import type net from 'node:net';

export interface WireServer {
  dir: string;
  store: Store;
  server: StateServer;
  socketPath: string;
  /** Every server-side connection, in accept order. */
  connections: ServerConnection[];
  /** Resolves once the server side of the n-th connection (0-based) has closed. */
  closed(n: number): Promise<void>;
  connect(framing: Framing): Promise<RawClient & { socket: net.Socket }>;
}

type After = { after(fn: () => void | Promise<void>): void };

export async function wireServer(t: After, transport: Partial<FramedTransportOptions> = {}): Promise<WireServer> {
  const dir = tempDir('hs-wire-');
  const store = await openIn(dir);
  const server = new StateServer(store, pino({ level: 'silent' }), { version: 'test', onExit: () => undefined });
  const connections: ServerConnection[] = [];
  const closes: Promise<void>[] = [];
  const listener = await listenUnixSocket(path.join(dir, 's.sock'), (socket) => {
    const tr = createFramedTransport(socket, socket, { maxMessageBytes: 1024 * 1024, ...transport });
    const conn = server.connect(tr.reader, tr.writer, 'socket');
    connections.push(conn);
    closes.push(new Promise((resolve) => conn.onClose(resolve)));
    conn.onClose(() => void conn.idle().then(() => tr.close()));
  });
  t.after(async () => {
    server.disposeAll();
    await listener.close();
    await store.close();
  });
  return {
    dir,
    store,
    server,
    socketPath: listener.path,
    connections,
    closed: async (n) => {
      while (closes.length <= n) await new Promise((r) => setImmediate(r));
      await closes[n];
    },
    connect: (framing) => connectRaw(listener.path, framing, t),
  };
}

/** A hung server fails the test instead of hanging the suite. */
export const LIMIT = { timeout: 15_000 };
