// The load of bench/memory.bench.ts: connections that each append continuously (awaiting each reply,
// one session each) while one subscriber to every transcript reads its notifications slowly, at a
// fixed byte rate, and subscribes again whenever it is told it fell too far behind. Used by
// bench/memory.bench.ts; the server's memory is what that bench watches.
import net from 'node:net';
import type { StateClient } from '../../src/client/client.js';
import { ENTRY } from './config.js';
import { connectClient } from './rpc.js';

/** A subscriber on a raw ndjson connection that reads at most `bytesPerSecond`. */
export interface SlowSubscriber {
  /** Bytes and transcript/didAppend notifications read so far. */
  readonly bytes: number;
  readonly notifications: number;
  /** watch/overflow notifications read (each followed by a new subscription). */
  readonly overflows: number;
  close(): void;
}

/**
 * Subscribes to every transcript, then reads at `bytesPerSecond`: after each chunk it pauses the
 * socket for as long as that chunk "costs" at the rate, so the server's unsent queue for it grows
 * whenever the appends outrun it. On watch/overflow it subscribes again, as a real client would.
 */
export async function slowSubscriber(socket: string, bytesPerSecond: number): Promise<SlowSubscriber> {
  const s = net.createConnection(socket);
  await new Promise<void>((resolve, reject) => {
    s.once('connect', resolve);
    s.once('error', reject);
  });
  let id = 0;
  const subscribe = (): void => void s.write(`${JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'watch/subscribe', params: { transcripts: '*' } })}\n`);
  const state = { bytes: 0, notifications: 0, overflows: 0 };
  let closed = false;
  let subscribed: () => void = () => undefined;
  const first = new Promise<void>((resolve) => (subscribed = resolve));
  let buf = '';
  s.on('data', (c: Buffer) => {
    state.bytes += c.length;
    buf += c.toString('utf8');
    for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
      const m = JSON.parse(buf.slice(0, nl)) as { id?: number; method?: string; error?: unknown };
      buf = buf.slice(nl + 1);
      if (m.method === 'transcript/didAppend') state.notifications++;
      else if (m.method === 'watch/overflow') {
        state.overflows++;
        subscribe();
      } else if (m.error !== undefined) throw new Error(`watch/subscribe failed: ${JSON.stringify(m.error)}`);
      else if (m.id === 1) subscribed();
    }
    if (closed) return;
    s.pause();
    setTimeout(() => s.resume(), (c.length / bytesPerSecond) * 1000);
  });
  subscribe();
  await first;
  return {
    get bytes() {
      return state.bytes;
    },
    get notifications() {
      return state.notifications;
    },
    get overflows() {
      return state.overflows;
    },
    close: () => {
      closed = true;
      s.destroy();
    },
  };
}

/** `count` typed clients connected to `socket`. */
export function appenders(socket: string, count: number): Promise<StateClient[]> {
  return Promise.all(Array.from({ length: count }, () => connectClient(socket)));
}

/** Every client appends to its own session, awaiting each reply, until `ms` have passed; returns the appends made. */
export async function appendFor(clients: readonly StateClient[], names: readonly string[], ms: number): Promise<number> {
  const end = Date.now() + ms;
  let count = 0;
  await Promise.all(
    clients.map(async (c, i) => {
      const name = names[i] as string;
      while (Date.now() < end) {
        await c.transcriptAppend({ name, entry: ENTRY });
        count++;
      }
    }),
  );
  return count;
}
