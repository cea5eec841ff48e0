// `npm run build && node --import tsx bench/append-cpu.ts [rounds] [cli.js…]`: the server's CPU per
// durable append (`--durability sync`, 64 connections on 64 sessions, each awaiting its own
// `transcript/append`, the load of row `append.sync.conns`), for one or more builds side by side.
// Each build's server runs at once; after one discarded round, rounds of up to RATE's calls
// alternate the builds' order, so every build sees the same moment's load. Prints per build the
// median and range of CPU per append (utime + stime of the whole process over the timed part,
// divided by the calls answered), its main thread's part, and the rate. With no cli.js given it
// measures BENCH_CLI (or dist/src/cli.js); BENCH_PROFILE=1 runs each under --cpu-prof
// (bench/results/prof); BENCH_THREADS=1 prints each thread's CPU at the end; TMPDIR=/dev/shm
// puts the state dirs on tmpfs, where fdatasync costs nothing and the server is bound by its CPU
// whatever the disk does. Not part of `npm run bench`: it diagnoses (docs/performance.md,
// "CPU per durable append").
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CLI, RATE } from './harness/config.js';
import type { AppendSample } from './harness/append-rounds.js';
import { alternatingRounds } from './harness/append-rounds.js';
import type { Rpc } from './harness/rpc.js';
import { connectClient, connectRpc } from './harness/rpc.js';
import type { SocketProc } from './harness/servers.js';
import { cpuSecondsOf, startServer } from './harness/servers.js';
import { median } from './harness/stats.js';
import { tempDir } from './harness/temp-dir.js';

const CONNECTIONS = 64;
const rounds = Number(process.argv[2] ?? 10);
// One round appends at most RATE.maxCount / 64 entries of 205 bytes to each transcript: 60 rounds
// stay below the 4 MiB that triggers a compaction, so every round measures steady appends.
if (!Number.isInteger(rounds) || rounds < 1 || rounds > 60) throw new Error(`usage: bench/append-cpu.ts [rounds 1–60] [cli.js…]; got ${process.argv[2]}`);
const clis = process.argv.length > 3 ? process.argv.slice(3).map((p) => path.resolve(p)) : [CLI];
const durability = process.env.BENCH_DURABILITY === 'write' ? 'write' : 'sync';

const dir = tempDir('hs-append-cpu-');

interface Side {
  name: string;
  proc: SocketProc;
  conns: Rpc[];
}

const sides: Side[] = [];
for (const [i, cli] of clis.entries()) {
  const proc = await startServer(`append-cpu-${i}`, path.join(dir, `state-${i}/state.json`), path.join(dir, `${i}.sock`), durability, { cli });
  const admin = await connectClient(proc.socket);
  for (let c = 0; c < CONNECTIONS; c++) await admin.sessionAdd({ session: { name: `c${c}` } });
  await admin.close();
  const conns = await Promise.all(Array.from({ length: CONNECTIONS }, () => connectRpc(proc.socket)));
  sides.push({ name: cli, proc, conns });
}

const samples = await alternatingRounds(sides, rounds, 'append-cpu');
if (process.env.BENCH_THREADS === '1') {
  for (const s of sides) {
    for (const tid of readdirSync(`/proc/${s.proc.pid}/task`)) {
      const comm = readFileSync(`/proc/${s.proc.pid}/task/${tid}/comm`, 'utf8').trim();
      process.stderr.write(`${s.name} thread ${tid} ${comm}: ${cpuSecondsOf(`/proc/${s.proc.pid}/task/${tid}/stat`).toFixed(2)} s\n`);
    }
  }
}
for (const s of sides) {
  await Promise.all(s.conns.map((c) => c.close()));
  await s.proc.stop();
}

const fmt = (n: number, digits: number): string => n.toFixed(digits);
const range = (xs: number[]): string => `${fmt(median(xs), 1)} (${fmt(Math.min(...xs), 1)}–${fmt(Math.max(...xs), 1)})`;
const lines = [
  `${CONNECTIONS} connections each awaiting its own transcript/append (${durability}), ${rounds} rounds of up to ${RATE.maxCount} calls or ${RATE.maxMs} ms per build, order alternating; median (range).`,
  'build | rate k/s | CPU/append µs | main thread µs',
  '---|---|---|---',
];
for (const s of sides) {
  const mine = samples.get(s) as AppendSample[];
  lines.push(`${s.name} | ${range(mine.map((m) => m.rate / 1000))} | ${range(mine.map((m) => m.cpuUs))} | ${range(mine.map((m) => m.mainUs))}`);
}
process.stdout.write(`${lines.join('\n')}\n`);
