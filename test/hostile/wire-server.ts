// An in-process server on a real unix socket for the wire attack cases: the Service `serve` runs,
// in a temp dir of its own, with the framing options under attack; stopped as `serve` stops
// when the test ends (or when `t`'s after hooks are run). `feed` lowers the change feed's bounds,
// so a test passes them with less data; `dir` serves a state dir given (a restart on it).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import type { ServerConnection } from '../../src/server/connection.js';
import type { StateServer } from '../../src/server/server.js';
import type { SubscriptionLimits } from '../../src/server/feed-limits.js';
import { Service } from '../../src/server/service.js';
import type { Store } from '../../src/store/store.js';
import type { FramedTransportOptions } from '../../src/transport/framing.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
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

export async function wireServer(t: After, transport: Partial<FramedTransportOptions> = {}, feed?: SubscriptionLimits, dir = tempDir('hs-wire-')): Promise<WireServer> {
  const connections: ServerConnection[] = [];
  const closes: Promise<void>[] = [];
  const service = await Service.open({
    state: statePathIn(dir),
    log: pino({ level: 'silent' }),
    version: 'test',
    framing: { maxMessageBytes: 1024 * 1024, ...transport },
    ...(feed ? { feed } : {}),
    onConnection: (conn) => {
      connections.push(conn);
      closes.push(new Promise((resolve) => conn.onClose(resolve)));
    },
  });
  const sockets: net.Socket[] = [];
  let socketPath: string;
  try {
    socketPath = await service.listen(path.join(dir, 's.sock'));
  } catch (err) {
    await service.discard();
    throw err;
  }
  t.after(async () => {
    // The attackers leave first (a client that never reads would otherwise hold the stop for its grace).
    for (const s of sockets) s.destroy();
    await service.stop(0, 'test ended');
  });
  return {
    dir,
    store: service.store,
    server: service.server,
    socketPath,
    connections,
    closed: async (n) => {
      while (closes.length <= n) await new Promise((r) => setImmediate(r));
      await closes[n];
    },
    connect: async (framing) => {
      const c = await connectRaw(socketPath, framing);
      sockets.push(c.socket);
      return c;
    },
  };
}

/** A hung server fails the test instead of hanging the suite. */
export const LIMIT = { timeout: 15_000 };

/**
 * The most a socket's kernel buffers and the client's last read can hold of what the server
 * wrote to a client that stopped reading: a unix socket's send buffer (wmem_default, 208 KiB when
 * unreadable) counts what sits in the reader's queue, and one more packet of up to half of it may
 * go out while under it; the client's last read is 64 KiB. Twice that, for margin.
 */
export function kernelSlack(): number {
  let wmem = 212_992;
  try {
    wmem = Number(readFileSync('/proc/sys/net/core/wmem_default', 'utf8').trim()) || wmem;
  } catch {
    // not Linux: the default
  }
  return 2 * (wmem + 64 * 1024);
}
