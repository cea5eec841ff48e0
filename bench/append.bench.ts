// Appends over a unix socket in both durability modes, against the ceilings measured in the same
// repetition: the bare vscode-jsonrpc echo server driven by the same client patterns, the
// minimal-store bound build (this build with the store cut down to the one write an append needs,
// bench/harness/bound-builds.ts), and in-process write(2), fdatasync, group commit, and SQLite
// (python3) on the same disk.
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { boundBundle, bundleOf, MINIMAL_STORE_BUILD, writeBoundCopy } from './harness/bound-builds.js';
import { ClientPool } from './harness/client-pool.js';
import { CLI, ENTRY, LATENCY, RATE } from './harness/config.js';
import { fdatasyncLatency, groupCommitRate, probeSqlite, sqliteRate } from './harness/disk.js';
import type { Call } from './harness/load.js';
import { awaitEach, eachAwaiting, prime, window } from './harness/load.js';
import type { RowSpec, Step } from './harness/report.js';
import { emit, progress, repeat, toRows } from './harness/report.js';
import type { Rpc } from './harness/rpc.js';
import { connectClient, connectRpc } from './harness/rpc.js';
import type { SocketProc } from './harness/servers.js';
import { startEcho, startServer } from './harness/servers.js';
import { benchDirs } from './harness/temp-dir.js';

const BENCH = 'append';
/** 64 connections on 64 sessions: the many-bridges case the targets are written for. */
const CONNECTIONS = 64;
/** What "1 connection with many in flight" keeps outstanding. */
const IN_FLIGHT = 256;
/** Client processes, each one connection with PROCESS_IN_FLIGHT appends outstanding (256 in all). */
const PROCESSES = 8;
const PROCESS_IN_FLIGHT = 32;

const { dir, rawDir } = benchDirs(BENCH);
/** Decided before anything starts, so a run without python3's sqlite3 says so and skips the row. */
const sqlite = await probeSqlite();

type Target = 'write' | 'sync' | 'echo' | 'bound';
/** The servers every client pattern runs against; the bound build runs the 64-connection one only. */
const TARGETS: Target[] = ['write', 'sync', 'echo'];
const OURS: Target[] = ['write', 'sync'];

const sessions = ['one', ...Array.from({ length: CONNECTIONS }, (_, i) => `c${i}`), ...Array.from({ length: PROCESSES }, (_, i) => `p${i}`)];
const connName = (i: number): string => (i === 0 ? 'one' : `c${i}`);

// Beside the build's dist/src (so it finds node_modules as the build does), removed at exit.
const boundFolder = path.join(path.dirname(CLI), '..', 'bounds', `append-${process.pid}`);
process.on('exit', () => rmSync(boundFolder, { recursive: true, force: true }));
const boundCli = writeBoundCopy(CLI, boundFolder, boundBundle(readFileSync(bundleOf(CLI), 'utf8'), MINIMAL_STORE_BUILD));
mkdirSync(path.join(dir, 'bound-files'));

const servers: Record<Target, SocketProc> = {
  write: await startServer('append-write', path.join(dir, 'write/state.json'), path.join(dir, 'write.sock'), 'write'),
  sync: await startServer('append-sync', path.join(dir, 'sync/state.json'), path.join(dir, 'sync.sock'), 'sync'),
  echo: await startEcho('append-echo', path.join(dir, 'echo.sock')),
  bound: await startServer('append-bound', path.join(dir, 'bound/state.json'), path.join(dir, 'bound.sock'), 'write', {
    cli: boundCli,
    env: { HS_BOUND_DIR: path.join(dir, 'bound-files') },
  }),
};
for (const t of OURS) {
  const admin = await connectClient(servers[t].socket);
  for (const name of sessions) await admin.sessionAdd({ session: { name } });
  await admin.close();
}
const startRss = Object.fromEntries(OURS.map((t) => [t, servers[t].memory().rssMB]));
const conns = {} as Record<Target, Rpc[]>;
for (const t of [...TARGETS, 'bound'] as const) conns[t] = await Promise.all(Array.from({ length: CONNECTIONS }, () => connectRpc(servers[t].socket)));
const pool = await ClientPool.start(PROCESSES);

const append = (rpc: Rpc, name: string): Call => () => rpc.request('transcript/append', { name, entry: ENTRY });
const first = (t: Target): Call => append(conns[t][0] as Rpc, 'one');

const oneConnection = (t: Target): Step => ({
  name: `${t} 1 connection awaiting each`,
  run: async (record) => {
    await prime([first(t)]);
    const r = await awaitEach(first(t), LATENCY);
    record(`${t}.1conn.p50`, r.p50);
    record(`${t}.1conn.p99`, r.p99);
  },
});

const inFlight = (t: Target): Step => ({
  name: `${t} 1 connection, ${IN_FLIGHT} in flight`,
  run: async (record) => {
    await prime([first(t)]);
    record(`${t}.window.rate`, (await window(first(t), IN_FLIGHT, RATE)).rate);
  },
});

const manyConnections = (t: Target): Step => ({
  name: `${t} ${CONNECTIONS} connections`,
  run: async (record) => {
    const calls = conns[t].map((rpc, i) => append(rpc, connName(i)));
    await prime(calls);
    const cpu0 = servers[t].cpuSeconds();
    const r = await eachAwaiting(calls, RATE);
    record(`${t}.conns.rate`, r.rate);
    record(`${t}.conns.cpu`, ((servers[t].cpuSeconds() - cpu0) * 1e6) / r.count);
  },
});

const processes = (t: Target): Step => ({
  name: `${t} ${PROCESSES} client processes`,
  run: async (record) => {
    record(`${t}.procs.rate`, (await pool.run(servers[t].socket, (i) => `p${i}`, PROCESS_IN_FLIGHT, RATE)).rate);
  },
});

const raw = (name: string, run: Step['run']): Step => ({ name, run });
const sqliteStep = raw('SQLite WAL synchronous=FULL (python3 sqlite3)', async (record) => {
  record('sqlite.rate', (await sqliteRate(rawDir, RATE)).rate);
});

const steps: Step[] = [
  ...TARGETS.map(oneConnection),
  raw('raw fdatasync, awaiting each', async (record) => {
    const r = await fdatasyncLatency(rawDir, LATENCY);
    record('raw.fdatasync.p50', r.p50);
    record('raw.fdatasync.p99', r.p99);
  }),
  raw('bare echo round trip, then raw fdatasync, awaiting each', async (record) => {
    record('echo+fdatasync.p50', (await fdatasyncLatency(rawDir, LATENCY, first('echo'))).p50);
  }),
  ...TARGETS.map(inFlight),
  ...[...TARGETS, 'bound' as const].map(manyConnections),
  raw(`raw write(2), ${CONNECTIONS} writers, own files`, async (record) => {
    record('raw.write.rate', (await groupCommitRate(rawDir, CONNECTIONS, 'own', false, RATE)).rate);
  }),
  raw(`raw group commit, ${CONNECTIONS} writers, own files`, async (record) => {
    record('raw.gc-own.rate', (await groupCommitRate(rawDir, CONNECTIONS, 'own', true, RATE)).rate);
  }),
  raw(`raw group commit, ${CONNECTIONS} writers, one shared file`, async (record) => {
    record('raw.gc-shared.rate', (await groupCommitRate(rawDir, CONNECTIONS, 'shared', true, RATE)).rate);
  }),
  ...(sqlite.skipped === undefined ? [sqliteStep] : []),
  ...TARGETS.map(processes),
];

// Untimed: every transcript starts empty again, so no repetition crosses the 4 MiB compaction
// trigger and all of them measure the same file sizes.
const reset = async (): Promise<void> => {
  for (const t of OURS) {
    const rpc = conns[t][0] as Rpc;
    for (const name of sessions) await rpc.request('transcript/remove', { name });
  }
  rmSync(rawDir, { recursive: true, force: true });
  mkdirSync(rawDir);
};

const samples = await repeat(BENCH, steps, { reset });

const C = `${CONNECTIONS} conns on ${CONNECTIONS} sessions`;
const P = `${PROCESSES} client processes × ${PROCESS_IN_FLIGHT}`;
const allSpecs: RowSpec[] = [
  { id: 'append.write.1conn.p50', measurement: 'append write, 1 conn awaiting each, p50', unit: 'µs', ours: 'write.1conn.p50', ceiling: 'echo.1conn.p50', ceilingLabel: 'bare echo' },
  { id: 'append.write.1conn.p99', measurement: 'append write, 1 conn awaiting each, p99', unit: 'µs', ours: 'write.1conn.p99', ceiling: 'echo.1conn.p99', ceilingLabel: 'bare echo' },
  { id: 'append.write.window', measurement: `append write, 1 conn, ${IN_FLIGHT} in flight`, unit: 'req/s', ours: 'write.window.rate', ceiling: 'echo.window.rate', ceilingLabel: 'bare echo' },
  { id: 'append.write.conns', measurement: `append write, ${C}`, unit: 'req/s', ours: 'write.conns.rate', ceiling: 'echo.conns.rate', ceilingLabel: 'bare echo' },
  { id: 'append.write.conns.bound', measurement: `append write, ${C}`, unit: 'req/s', ours: 'write.conns.rate', ceiling: 'bound.conns.rate', ceilingLabel: 'minimal-store bound build' },
  { id: 'append.write.conns.inproc', measurement: `append write, ${C}`, unit: 'req/s', ours: 'write.conns.rate', ceiling: 'raw.write.rate', ceilingLabel: `in-process write(2)` },
  { id: 'append.write.procs', measurement: `append write, ${P}`, unit: 'req/s', ours: 'write.procs.rate', ceiling: 'echo.procs.rate', ceilingLabel: 'bare echo' },
  { id: 'append.write.conns.cpu', measurement: `server CPU per append, write, ${CONNECTIONS} conns`, unit: 'µs', ours: 'write.conns.cpu', ceiling: 'echo.conns.cpu', ceilingLabel: 'bare echo' },
  { id: 'append.sync.1conn.p50', measurement: 'append sync, 1 conn awaiting each, p50', unit: 'µs', ours: 'sync.1conn.p50', ceiling: 'raw.fdatasync.p50', ceilingLabel: 'raw write+fdatasync' },
  { id: 'append.sync.1conn.p50.serial', measurement: 'append sync, 1 conn awaiting each, p50', unit: 'µs', ours: 'sync.1conn.p50', ceiling: 'echo+fdatasync.p50', ceilingLabel: 'bare echo round trip + raw write+fdatasync' },
  { id: 'append.sync.1conn.p99', measurement: 'append sync, 1 conn awaiting each, p99', unit: 'µs', ours: 'sync.1conn.p99', ceiling: 'raw.fdatasync.p99', ceilingLabel: 'raw write+fdatasync' },
  { id: 'append.sync.window', measurement: `append sync, 1 conn, ${IN_FLIGHT} in flight`, unit: 'req/s', ours: 'sync.window.rate', ceiling: 'write.window.rate', ceilingLabel: 'ours, write' },
  { id: 'append.sync.conns', measurement: `append sync, ${C}`, unit: 'req/s', ours: 'sync.conns.rate', ceiling: 'write.conns.rate', ceilingLabel: 'ours, write' },
  { id: 'append.sync.conns.sqlite', measurement: `append sync, ${C}`, unit: 'req/s', ours: 'sync.conns.rate', ceiling: 'sqlite.rate', ceilingLabel: 'SQLite WAL FULL, 1 row/txn' },
  { id: 'append.sync.conns.gc-own', measurement: `append sync, ${C}`, unit: 'req/s', ours: 'sync.conns.rate', ceiling: 'raw.gc-own.rate', ceilingLabel: `raw group commit, ${CONNECTIONS} files` },
  { id: 'append.sync.conns.gc-shared', measurement: `append sync, ${C}`, unit: 'req/s', ours: 'sync.conns.rate', ceiling: 'raw.gc-shared.rate', ceilingLabel: 'raw group commit, 1 shared file' },
  { id: 'append.sync.procs', measurement: `append sync, ${P}`, unit: 'req/s', ours: 'sync.procs.rate', ceiling: 'write.procs.rate', ceilingLabel: 'ours, write' },
  { id: 'append.sync.conns.cpu', measurement: `server CPU per append, sync, ${CONNECTIONS} conns`, unit: 'µs', ours: 'sync.conns.cpu', ceiling: 'echo.conns.cpu', ceilingLabel: 'bare echo' },
];
const specs = sqlite.skipped === undefined ? allSpecs : allSpecs.filter((s) => s.ceiling !== 'sqlite.rate');

const memory = OURS.map((t) => ({ server: servers[t].name, ...servers[t].memory(), startRssMB: startRss[t] }));
progress(BENCH, 'stopping');
for (const t of [...TARGETS, 'bound'] as const) await Promise.all(conns[t].map((c) => c.close()));
await pool.stop();
for (const t of [...TARGETS, 'bound'] as const) await servers[t].stop();

emit({
  bench: BENCH,
  rows: toRows(samples, specs),
  memory,
  notes: [
    `Every pattern is the same client code (src/client's transport) against our server and the bare echo server, which answers the same transcript/append requests with {}.`,
    `${CONNECTIONS} connections: each awaits its own call, one session each. ${PROCESSES} client processes: each one connection with ${PROCESS_IN_FLIGHT} appends in flight on its own session.`,
    'Transcripts are removed between repetitions (untimed) and one repetition appends at most 3.7 MB to one transcript, so none crosses the 4 MiB compaction trigger; each step first makes one call per connection (untimed) to open its files.',
    'Server CPU per append: utime+stime of the server process from /proc over the timed part, divided by the calls completed.',
    'Minimal-store bound build: this build with transcript/append cut down to validating the params, encoding the line and writing it to its own file through the writer thread before answering (no row check, name cache, commit queue, seq file or change feed); made beside the build for the run and removed after it (bench/harness/bound-builds.ts).',
    sqlite.skipped === undefined
      ? `SQLite ceiling: SQLite ${sqlite.sqlite} through python3 ${sqlite.python}'s sqlite3 (bench/fixtures/sqlite-ceiling.py), timed inside the script around its inserts.`
      : `SQLite ceiling skipped: ${sqlite.skipped} (the row needs python3 with its standard sqlite3 module).`,
  ],
});
