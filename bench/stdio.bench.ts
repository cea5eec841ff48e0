// The sidecar path: appends over `serve --stdio` (what the Herrscher host runs) in both durability
// modes against the bare vscode-jsonrpc echo server on stdio, and the time from spawn to the first
// reply (initialize) against that same bare server.
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ENTRY, LATENCY, RATE, SPAWNS_PER_REP } from './harness/config.js';
import { fdatasyncLatency } from './harness/disk.js';
import type { Call } from './harness/load.js';
import { awaitEach, prime, window } from './harness/load.js';
import type { RowSpec, Step } from './harness/report.js';
import { emit, progress, repeat, toRows } from './harness/report.js';
import type { StdioProc } from './harness/servers.js';
import { startEchoStdio, startServerStdio } from './harness/servers.js';
import { median, nowUs } from './harness/stats.js';
import { benchDirs } from './harness/temp-dir.js';

const BENCH = 'stdio';
const IN_FLIGHT = 256;

const { dir, rawDir } = benchDirs(BENCH);

type Target = 'write' | 'sync' | 'echo';
const TARGETS: Target[] = ['write', 'sync', 'echo'];
const OURS: Target[] = ['write', 'sync'];

const servers: Record<Target, StdioProc> = {
  write: startServerStdio('stdio-write', path.join(dir, 'write/state.json'), 'write'),
  sync: startServerStdio('stdio-sync', path.join(dir, 'sync/state.json'), 'sync'),
  echo: startEchoStdio('stdio-echo'),
};
for (const t of OURS) await servers[t].rpc.request('session/add', { session: { name: 'one' } });
const startRss = Object.fromEntries(OURS.map((t) => [t, servers[t].memory().rssMB]));

const append = (t: Target): Call => () => servers[t].rpc.request('transcript/append', { name: 'one', entry: ENTRY });

let spawnSeq = 0;
/** ms from spawn() to the initialize reply; the process is then ended through stdin EOF. */
async function spawnToFirstReply(start: () => StdioProc): Promise<number> {
  const t0 = nowUs();
  const proc = start();
  await proc.rpc.request('initialize', { clientInfo: { name: 'bench' } });
  const ms = (nowUs() - t0) / 1000;
  await proc.stop();
  return ms;
}

const steps: Step[] = [
  ...TARGETS.map((t): Step => ({
    name: `${t} stdio awaiting each`,
    run: async (record) => {
      await prime([append(t)]);
      const r = await awaitEach(append(t), LATENCY);
      record(`${t}.1conn.p50`, r.p50);
      record(`${t}.1conn.p99`, r.p99);
    },
  })),
  {
    name: 'raw fdatasync, awaiting each',
    run: async (record) => {
      record('raw.fdatasync.p50', (await fdatasyncLatency(rawDir, LATENCY)).p50);
    },
  },
  ...TARGETS.map((t): Step => ({
    name: `${t} stdio, ${IN_FLIGHT} in flight`,
    run: async (record) => {
      await prime([append(t)]);
      record(`${t}.window.rate`, (await window(append(t), IN_FLIGHT, RATE)).rate);
    },
  })),
  {
    name: 'spawn to first reply',
    run: async (record) => {
      // Interleaved so that both sides see the same page cache and background load.
      const ours: number[] = [];
      const bare: number[] = [];
      for (let i = 0; i < SPAWNS_PER_REP; i++) {
        const state = path.join(dir, `spawn-${++spawnSeq}/state.json`);
        ours.push(await spawnToFirstReply(() => startServerStdio('spawn', state, 'sync', false)));
        bare.push(await spawnToFirstReply(() => startEchoStdio('spawn-echo')));
      }
      record('spawn.ours', median(ours));
      record('spawn.echo', median(bare));
    },
  },
];

// Untimed: the transcripts start empty again, so no repetition crosses the compaction trigger.
const reset = async (): Promise<void> => {
  for (const t of OURS) await servers[t].rpc.request('transcript/remove', { name: 'one' });
  rmSync(rawDir, { recursive: true, force: true });
  mkdirSync(rawDir);
};

const samples = await repeat(BENCH, steps, { reset });

const specs: RowSpec[] = [
  { id: 'stdio.write.1conn.p50', measurement: 'append write over stdio, awaiting each, p50', unit: 'µs', ours: 'write.1conn.p50', ceiling: 'echo.1conn.p50', ceilingLabel: 'bare echo, stdio' },
  { id: 'stdio.write.window', measurement: `append write over stdio, ${IN_FLIGHT} in flight`, unit: 'req/s', ours: 'write.window.rate', ceiling: 'echo.window.rate', ceilingLabel: 'bare echo, stdio' },
  { id: 'stdio.sync.1conn.p50', measurement: 'append sync over stdio, awaiting each, p50', unit: 'µs', ours: 'sync.1conn.p50', ceiling: 'raw.fdatasync.p50', ceilingLabel: 'raw write+fdatasync' },
  { id: 'stdio.sync.1conn.p99', measurement: 'append sync over stdio, awaiting each, p99', unit: 'µs', ours: 'sync.1conn.p99', ceiling: 'echo.1conn.p99', ceilingLabel: 'bare echo, stdio' },
  { id: 'stdio.sync.window', measurement: `append sync over stdio, ${IN_FLIGHT} in flight`, unit: 'req/s', ours: 'sync.window.rate', ceiling: 'write.window.rate', ceilingLabel: 'ours, write' },
  { id: 'spawn.first-reply', measurement: 'spawn to first reply (initialize)', unit: 'ms', ours: 'spawn.ours', ceiling: 'spawn.echo', ceilingLabel: 'bare vscode-jsonrpc stdio server' },
];

const memory = OURS.map((t) => ({ server: servers[t].name, ...servers[t].memory(), startRssMB: startRss[t] }));
progress(BENCH, 'stopping');
for (const t of TARGETS) await servers[t].stop();

emit({
  bench: BENCH,
  rows: toRows(samples, specs),
  memory,
  notes: [
    'stdio: the server is spawned by the bench and driven through the same framed transport the typed client uses; the echo server is plain vscode-jsonrpc on its stdin/stdout.',
    `Spawn to first reply: from spawn() to the initialize reply, ${SPAWNS_PER_REP} interleaved starts per side and repetition (their median is the sample); ours on a fresh state dir, without --cpu-prof.`,
  ],
});
