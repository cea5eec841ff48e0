// The shared server (`serve --shared`): what a new state costs once the server runs (a call,
// not a process), and its memory with many states open. The first call on a new state is what
// Herrscher's tests pay for each t.TempDir(): connect, initialize with the state, one durable
// write, on a fresh dir; its ceiling is the same sequence on a state the server has open already.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Rpc } from './harness/rpc.js';
import { rpcOverSocket } from './harness/rpc.js';
import { QUICK } from './harness/config.js';
import type { RowSpec, Step } from './harness/report.js';
import { emit, progress, repeat, toRows } from './harness/report.js';
import { startShared } from './harness/servers.js';
import { median, nowUs } from './harness/stats.js';
import { benchDirs } from './harness/temp-dir.js';

const BENCH = 'shared';
/** First calls per repetition (their median is the sample). */
const FIRST_CALLS = QUICK ? 5 : 20;
/** States open at once for the memory row (the 200 state files in use). */
const MANY_STATES = 200;

const { dir } = benchDirs(BENCH);
const server = await startShared('shared', path.join(dir, 'shared.sock'), 'sync');
const startRss = server.memory().rssMB;

let seq = 0;
/** A fresh state dir (0700, as t.TempDir makes), made before the clock starts. */
function freshState(): string {
  const d = path.join(dir, `state-${++seq}`);
  mkdirSync(d, { mode: 0o700 });
  return path.join(d, 'state.json');
}

/** ms from connect to the answer of the first write: connect, initialize(state), session/add. */
async function firstCall(state: string, name: string): Promise<{ ms: number; rpc: Rpc }> {
  const t0 = nowUs();
  const rpc = await rpcOverSocket(server.socket);
  await rpc.request('initialize', { clientInfo: { name: 'bench' }, state });
  await rpc.request('session/add', { session: { name } });
  return { ms: (nowUs() - t0) / 1000, rpc };
}

const warmState = freshState();
await (await firstCall(warmState, 'warm')).rpc.close();

const steps: Step[] = [
  {
    name: 'first call on a new state, and on an open one',
    run: async (record) => {
      // Interleaved, so both see the same load.
      const fresh: number[] = [];
      const open: number[] = [];
      for (let i = 0; i < FIRST_CALLS; i++) {
        const a = await firstCall(freshState(), 'first');
        fresh.push(a.ms);
        await a.rpc.close();
        const b = await firstCall(warmState, `again-${seq}-${i}`);
        open.push(b.ms);
        await b.rpc.close();
      }
      record('first-call.new', median(fresh));
      record('first-call.open', median(open));
    },
  },
];

const samples = await repeat(BENCH, steps);

progress(BENCH, `opening ${MANY_STATES} states at once`);
const held: Rpc[] = [];
for (let i = 0; i < MANY_STATES; i++) held.push((await firstCall(freshState(), `many-${i}`)).rpc);
const many = server.memory();
for (const rpc of held) await rpc.close();

const specs: RowSpec[] = [
  {
    id: 'shared.first-call',
    measurement: 'shared server warm: connect + initialize(state) + first durable write on a fresh state dir, p50',
    unit: 'ms',
    ours: 'first-call.new',
    ceiling: 'first-call.open',
    ceilingLabel: 'the same on a state already open',
  },
];

progress(BENCH, 'stopping');
await server.stop();

const rows = toRows(samples, specs);
rows.push({ id: 'shared.rss.200-states', measurement: `shared server RSS with ${MANY_STATES} states open at once`, unit: 'MB', ours: { median: many.rssMB, samples: [many.rssMB] } });

emit({
  bench: BENCH,
  rows,
  memory: [{ server: server.name, rssMB: many.rssMB, hwmMB: many.hwmMB, startRssMB: startRss }],
  notes: [
    `shared.first-call: ${FIRST_CALLS} first calls per repetition on fresh dirs (their median is the sample), interleaved with the same sequence on a state the server holds open; one shared server for the whole bench, --durability sync.`,
    `shared.rss.200-states: VmRSS once ${MANY_STATES} fresh states are open, each with a connection and one session written.`,
  ],
});
