// The change feed under a subscriber that never reads: 20 000 appends of
// 4 KiB (80 MB of notifications, 5 × the 16 MiB the stalled queue may hold) while one connection
// subscribed to every transcript has stopped reading and another reads everything. Measured: the
// server's peak RSS and the append rate, each against the same run without the stalled
// subscriber. This was a test (test/e2e/watch.test.ts) until it hit its timeout under load:
// memory and throughput are measurements, reported against bench/targets.ts; the behaviour
// (overflow sent, reader complete and in order, writer answered) is still checked on every
// repetition here, and in the suite with a smaller N.
import net from 'node:net';
import path from 'node:path';
import type { StateClient } from '../src/client/client.js';
import { QUICK } from './harness/config.js';
import type { RowSpec, Step } from './harness/report.js';
import { emit, progress, repeat, toRows } from './harness/report.js';
import { connectClient } from './harness/rpc.js';
import type { ServerMemory } from './harness/report.js';
import { startServer } from './harness/servers.js';
import { nowUs } from './harness/stats.js';
import { benchDirs } from './harness/temp-dir.js';

const BENCH = 'feed-memory';
/**
 * The test this replaces appended 50 000; 20 000 already pass the queue's bound five times over
 * (the peak is reached once it is full), and 12 runs of 50 000 outlasted run.ts's 360 s per bench
 * on a loaded machine. A quick run only smoke-tests the path.
 */
const N = QUICK ? 5000 : 20_000;
const WINDOW = 500;
const TEXT = 'x'.repeat(4096);

const { dir } = benchDirs(BENCH);
let run = 0;
const memory: ServerMemory[] = [];

/** A connection that subscribes to every transcript, then stops reading; says whether it got watch/overflow. */
async function stalledSubscriber(socket: string): Promise<{ resumeAndCheck(): Promise<boolean>; close(): void }> {
  const s = net.createConnection(socket);
  await new Promise<void>((resolve, reject) => {
    s.once('connect', resolve);
    s.once('error', reject);
  });
  let buf = '';
  let overflowed = false;
  const replied = new Set<number>();
  const waiters: (() => void)[] = [];
  s.on('data', (c: Buffer) => {
    buf += c.toString('utf8');
    for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
      const m = JSON.parse(buf.slice(0, nl)) as { id?: number; method?: string };
      buf = buf.slice(nl + 1);
      if (m.method === 'watch/overflow') overflowed = true;
      else if (m.method === undefined && typeof m.id === 'number') replied.add(m.id);
    }
    for (const w of waiters.splice(0)) w();
  });
  const reply = (id: number): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => {
        if (replied.has(id)) resolve();
        else waiters.push(check);
      };
      check();
    });
  s.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'watch/subscribe', params: { transcripts: '*' } })}\n`);
  await reply(1);
  s.pause();
  return {
    // A reply comes after every notification queued before it: once it is here, so is any overflow.
    resumeAndCheck: async () => {
      s.resume();
      s.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'session/list' })}\n`);
      await reply(2);
      return overflowed;
    },
    close: () => s.destroy(),
  };
}

/** One run on a fresh server: N appends while a reader follows them, with or without a stalled subscriber. */
async function appendRun(stalled: boolean): Promise<{ peakMB: number; rate: number }> {
  const name = `${stalled ? 'stalled' : 'plain'}-${++run}`;
  const server = await startServer(name, path.join(dir, `${name}/state.json`), path.join(dir, `${name}.sock`), 'sync');
  const clients: StateClient[] = [];
  try {
    const writer = await connectClient(server.socket);
    const reader = await connectClient(server.socket);
    clients.push(writer, reader);
    await writer.sessionAdd({ session: { name: 'a' } });
    const slow = stalled ? await stalledSubscriber(server.socket) : undefined;

    let seen = 0;
    let outOfOrder = '';
    let waiting: { seq: number; resolve(): void } | undefined;
    reader.onNotification('transcript/didAppend', (p) => {
      if (p.seq !== seen && !outOfOrder) outOfOrder = `expected seq ${seen}, got ${p.seq}`;
      seen = p.seq + 1;
      if (waiting && p.seq >= waiting.seq) waiting.resolve();
    });
    let readerOverflowed = false;
    reader.onNotification('watch/overflow', () => (readerOverflowed = true));
    await reader.watchSubscribe({ transcripts: ['a'] });

    const t0 = nowUs();
    let expected = 0;
    for (let from = 0; from < N; from += WINDOW) {
      const batch = Array.from({ length: Math.min(WINDOW, N - from) }, (_, i) =>
        writer.transcriptAppend({ name: 'a', entry: { ts: '2026-01-01T00:00:00Z', role: 'user', text: `${from + i}:${TEXT}` } }),
      );
      for (const r of await Promise.all(batch)) {
        if (r.seq !== expected++) throw new Error(`append answered seq ${r.seq}, expected ${expected - 1}`);
      }
    }
    const rate = N / ((nowUs() - t0) / 1e6);
    const { hwmMB, rssMB } = server.memory();

    // The behaviour the numbers are about: the reader got everything in order, the stalled one its overflow.
    if (seen < N) await new Promise<void>((resolve) => (waiting = { seq: N - 1, resolve }));
    if (outOfOrder || readerOverflowed) throw new Error(`the reading subscriber was disturbed: ${outOfOrder || 'it got watch/overflow'}`);
    if (slow) {
      if (!(await slow.resumeAndCheck())) throw new Error('the stalled subscriber never got watch/overflow');
      slow.close();
    }
    memory.push({ server: name, rssMB, hwmMB });
    return { peakMB: hwmMB, rate };
  } finally {
    for (const c of clients) await c.close();
    await server.stop();
  }
}

const steps: Step[] = [true, false].map((stalled) => ({
  name: `${N} appends of 4 KiB, ${stalled ? 'one subscriber stalled' : 'no stalled subscriber'}`,
  run: async (record) => {
    const r = await appendRun(stalled);
    record(`${stalled ? 'stalled' : 'plain'}.peak`, r.peakMB);
    record(`${stalled ? 'stalled' : 'plain'}.rate`, r.rate);
  },
}));

const samples = await repeat(BENCH, steps);
const specs: RowSpec[] = [
  { id: 'feed.stalled.peak-rss', measurement: `server peak RSS, ${N} appends of 4 KiB, one subscriber never reads`, unit: 'MB', ours: 'stalled.peak', ceiling: 'plain.peak', ceilingLabel: 'no stalled subscriber' },
  { id: 'feed.stalled.appends', measurement: `append sync rate, ${N} appends of 4 KiB in windows of ${WINDOW}, one subscriber never reads`, unit: 'req/s', ours: 'stalled.rate', ceiling: 'plain.rate', ceilingLabel: 'no stalled subscriber' },
];
progress(BENCH, 'done');
emit({
  bench: BENCH,
  rows: toRows(samples, specs),
  // The memory table row is about a server after an ordinary run; these peaks are this bench's rows.
  memory: [],
  notes: [
    `every repetition starts a fresh server (peak RSS is per process); a reading subscriber must get all ${N} notifications in order and the stalled one watch/overflow, or the bench fails.`,
    `Peak RSS of the runs: ${memory.map((m) => `${m.server} ${m.hwmMB.toFixed(0)} MB`).join(', ')}.`,
  ],
});
