// The shared server (`serve --shared`): what a new state costs once the server runs (a call,
// not a process), and its memory with many states open. The first call on a new state is what
// Herrscher's tests pay for each t.TempDir(): connect, initialize with the state, one write, on a
// fresh dir; its ceiling is the same sequence on a state the server has open already. Measured on
// a `--durability write` server (what the Go drop-in starts: Go's package never fsyncs) and on a
// `sync` one (the default of `serve`).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Rpc } from './harness/rpc.js';
import { rpcOverSocket } from './harness/rpc.js';
import { QUICK } from './harness/config.js';
import type { RowSpec, Step } from './harness/report.js';
import { emit, progress, repeat, toRows } from './harness/report.js';
import type { Durability, SocketProc } from './harness/servers.js';
import { startShared } from './harness/servers.js';
import { median, nowUs } from './harness/stats.js';
import { benchDirs } from './harness/temp-dir.js';

const BENCH = 'shared';
/** First calls per repetition (their median is the sample). */
const FIRST_CALLS = QUICK ? 5 : 20;
/** States open at once for the memory row (the 200 state files in use). */
const MANY_STATES = 200;
const DURABILITIES: Durability[] = ['write', 'sync'];

const { dir } = benchDirs(BENCH);
const servers = {} as Record<Durability, SocketProc>;
for (const d of DURABILITIES) servers[d] = await startShared(`shared-${d}`, path.join(dir, `shared-${d}.sock`), d);
const startRss = servers.write.memory().rssMB;

let seq = 0;
/** A fresh state dir (0700, as t.TempDir makes), made before the clock starts. */
function freshState(): string {
  const d = path.join(dir, `state-${++seq}`);
  mkdirSync(d, { mode: 0o700 });
  return path.join(d, 'state.json');
}

/** ms from connect to the answer of the first write: connect, initialize(state), session/add. */
async function firstCall(server: SocketProc, state: string, name: string): Promise<{ ms: number; rpc: Rpc }> {
  const t0 = nowUs();
  const rpc = await rpcOverSocket(server.socket);
  await rpc.request('initialize', { clientInfo: { name: 'bench' }, state });
  await rpc.request('session/add', { session: { name } });
  return { ms: (nowUs() - t0) / 1000, rpc };
}

const warmStates = {} as Record<Durability, string>;
for (const d of DURABILITIES) {
  warmStates[d] = freshState();
  await (await firstCall(servers[d], warmStates[d], 'warm')).rpc.close();
}

/** FIRST_CALLS first calls on `state()`: their median latency, and the server's CPU per call. */
async function firstCalls(server: SocketProc, state: () => string, name: (i: number) => string): Promise<{ p50: number; cpuMs: number }> {
  const ms: number[] = [];
  const cpu0 = server.cpuSeconds();
  for (let i = 0; i < FIRST_CALLS; i++) {
    const a = await firstCall(server, state(), name(i));
    ms.push(a.ms);
    await a.rpc.close();
  }
  return { p50: median(ms), cpuMs: ((server.cpuSeconds() - cpu0) * 1000) / FIRST_CALLS };
}

// Separate steps, which repeat() runs in alternating order, so none always meets another's leftovers.
const steps: Step[] = DURABILITIES.flatMap((d): Step[] => [
  {
    name: `first call on a new state (${d})`,
    run: async (record) => {
      const r = await firstCalls(servers[d], freshState, () => 'first');
      record(`${d}.new`, r.p50);
      record(`${d}.new.cpu`, r.cpuMs);
    },
  },
  {
    name: `the same on a state already open (${d})`,
    run: async (record) => {
      const r = await firstCalls(servers[d], () => warmStates[d], (i) => `again-${++seq}-${i}`);
      record(`${d}.open`, r.p50);
      record(`${d}.open.cpu`, r.cpuMs);
    },
  },
]);

const samples = await repeat(BENCH, steps);

progress(BENCH, `opening ${MANY_STATES} states at once`);
const held: Rpc[] = [];
for (let i = 0; i < MANY_STATES; i++) held.push((await firstCall(servers.write, freshState(), `many-${i}`)).rpc);
const many = servers.write.memory();
for (const rpc of held) await rpc.close();

const open = 'the same on a state already open';
const specs: RowSpec[] = [
  { id: 'shared.first-call', measurement: 'shared server (write) warm: connect + initialize(state) + first write on a fresh state dir, p50', unit: 'ms', ours: 'write.new', ceiling: 'write.open', ceilingLabel: open },
  { id: 'shared.first-call.cpu', measurement: 'shared server (write) CPU per first call on a fresh state dir', unit: 'ms', ours: 'write.new.cpu', ceiling: 'write.open.cpu', ceilingLabel: open },
  { id: 'shared.first-call.sync', measurement: 'shared server (sync) warm: connect + initialize(state) + first durable write on a fresh state dir, p50', unit: 'ms', ours: 'sync.new', ceiling: 'sync.open', ceilingLabel: open },
  { id: 'shared.first-call.sync.cpu', measurement: 'shared server (sync) CPU per first call on a fresh state dir', unit: 'ms', ours: 'sync.new.cpu', ceiling: 'sync.open.cpu', ceilingLabel: open },
];

progress(BENCH, 'stopping');
for (const d of DURABILITIES) await servers[d].stop();

const rows = toRows(samples, specs);
rows.push({ id: 'shared.rss.200-states', measurement: `shared server RSS with ${MANY_STATES} states open at once`, unit: 'MB', ours: { median: many.rssMB, samples: [many.rssMB] } });

emit({
  bench: BENCH,
  rows,
  memory: [{ server: servers.write.name, rssMB: many.rssMB, hwmMB: many.hwmMB, startRssMB: startRss }],
  notes: [
    `shared.first-call*: ${FIRST_CALLS} first calls per repetition on fresh dirs (their median is the sample), and as many of the same sequence on a state the server holds open; one shared server per durability for the whole bench.`,
    '*.cpu: the server\'s user + system CPU over those calls, per call (its writer thread included): what a new state costs the machine, whatever the load.',
    `shared.rss.200-states: VmRSS of the write server once ${MANY_STATES} fresh states are open, each with a connection and one session written.`,
  ],
});
