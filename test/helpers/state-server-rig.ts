// A StateServer on a real store in a fresh temp dir, with connections over in-memory streams the
// test writes to and reads from (no socket, no Service): test/server/state-server.test.ts and
// server-connection.test.ts.
import { PassThrough } from 'node:stream';
import pino from 'pino';
import type { ServerConnection } from '../../src/server/connection.js';
import type { ServerOptions } from '../../src/server/server.js';
import { StateServer } from '../../src/server/server.js';
import { Store } from '../../src/store/store.js';
import { createFramedTransport } from '../../src/transport/framing.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../src/transport/limits.js';
import type { LogLine } from './server.js';
import { statePathIn, tempDir } from './temp-dir.js';
import { RawClient } from './wire.js';

export type RigClient = RawClient & { conn: ServerConnection; closed: Promise<void> };

export interface Rig {
  dir: string;
  store: Store;
  server: StateServer;
  logs: LogLine[];
  exits: number[];
  /** A client on a new connection the server sees as `transport`; `end()` closes it, `closed` resolves once the server saw that. */
  connect(transport?: string): RigClient;
}

/** A store in a fresh temp dir and a StateServer on it; both go when the test ends. */
export async function stateServerRig(t: { after(fn: () => unknown): void }, options: Partial<ServerOptions> = {}, dir = tempDir('hs-server-')): Promise<Rig> {
  const logs: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
  const store = await Store.open(statePathIn(dir));
  const exits: number[] = [];
  const server = new StateServer(store, log, { version: '7.7.7', onExit: (code) => exits.push(code), ...options });
  const pipes: PassThrough[] = [];
  t.after(async () => {
    for (const p of pipes) p.end();
    server.disposeAll();
    await store.close();
  });
  return {
    dir,
    store,
    server,
    logs,
    exits,
    connect(transport = 'socket') {
      const toServer = new PassThrough();
      const fromServer = new PassThrough();
      pipes.push(toServer, fromServer);
      const framed = createFramedTransport(toServer, fromServer, { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES });
      const conn = server.connect(framed.reader, framed.writer, transport);
      return Object.assign(new RawClient(fromServer, toServer, 'ndjson'), { conn, closed: new Promise<void>((resolve) => conn.onClose(resolve)) });
    },
  };
}

/** A promise and the function that resolves it. */
export function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
