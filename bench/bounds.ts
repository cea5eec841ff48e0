// `npm run build && node --import tsx bench/bounds.ts [rounds]`: what bounds the non-durable append
// rate at 64 connections against the bare echo (docs/performance.md "What bounds
// the ratio"). Runs the build, copies of its bundle with part of an append's work taken out
// (bench/harness/bound-builds.ts) and the echo server side by side, 64 connections each, in rounds
// that alternate their order (after one discarded round); prints per build the median and range
// of the per-round ratios to the echo, and the server's CPU per append, its main thread's apart.
// Not part of `npm run bench`: the copies skip validation or the store, so this diagnoses, it does
// not measure the product.
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { boundBundle, BOUND_BUILDS, bundleOf, writeBoundCopy } from './harness/bound-builds.js';
import { CLI, ENTRY, RATE, REPO } from './harness/config.js';
import type { Call } from './harness/load.js';
import { eachAwaiting, prime } from './harness/load.js';
import type { Rpc } from './harness/rpc.js';
import { connectClient, connectRpc } from './harness/rpc.js';
import type { SocketProc } from './harness/servers.js';
import { cpuSecondsOf, startEcho, startServer } from './harness/servers.js';
import { median } from './harness/stats.js';
import { tempDir } from './harness/temp-dir.js';

const CONNECTIONS = 64;
const rounds = Number(process.argv[2] ?? 10);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`usage: bench/bounds.ts [rounds ≥ 1]; got ${process.argv[2]}`);

const dir = tempDir('hs-bounds-');
// Beside dist/, so each copy finds node_modules (its one external) and package.json's "type" as the build does.
const copies = path.join(REPO, 'dist/bounds');
mkdirSync(copies, { recursive: true });
process.on('exit', () => rmSync(copies, { recursive: true, force: true }));
const bundle = readFileSync(bundleOf(CLI), 'utf8');

interface Side {
  name: string;
  leavesOut: string;
  proc: SocketProc;
  conns: Rpc[];
}

const sides: Side[] = [];
for (const [i, build] of BOUND_BUILDS.entries()) {
  const cli = writeBoundCopy(CLI, path.join(copies, `bound-${i}`), boundBundle(bundle, build));
  const files = path.join(dir, `files-${i}`);
  mkdirSync(files);
  const proc = await startServer(`bound-${i}`, path.join(dir, `state-${i}/state.json`), path.join(dir, `${i}.sock`), 'write', { cli, env: { HS_BOUND_DIR: files } });
  const admin = await connectClient(proc.socket);
  for (let c = 0; c < CONNECTIONS; c++) await admin.sessionAdd({ session: { name: `c${c}` } });
  await admin.close();
  sides.push({ name: build.name, leavesOut: build.leavesOut, proc, conns: [] });
}
const echo = await startEcho('echo', path.join(dir, 'echo.sock'));
sides.push({ name: 'bare echo', leavesOut: '(the ceiling: answers {})', proc: echo, conns: [] });
for (const s of sides) s.conns = await Promise.all(Array.from({ length: CONNECTIONS }, () => connectRpc(s.proc.socket)));

interface Sample {
  rate: number;
  cpuUs: number;
  mainUs: number;
}

async function round(s: Side): Promise<Sample> {
  const calls: Call[] = s.conns.map((rpc, c) => () => rpc.request('transcript/append', { name: `c${c}`, entry: ENTRY }));
  await prime(calls);
  const pid = s.proc.pid;
  const cpu0 = s.proc.cpuSeconds();
  const main0 = cpuSecondsOf(`/proc/${pid}/task/${pid}/stat`);
  const r = await eachAwaiting(calls, RATE);
  return {
    rate: r.rate,
    cpuUs: ((s.proc.cpuSeconds() - cpu0) * 1e6) / r.count,
    mainUs: ((cpuSecondsOf(`/proc/${pid}/task/${pid}/stat`) - main0) * 1e6) / r.count,
  };
}

// One discarded round first: JIT warm-up and the files' first opens land in no sample.
for (const s of sides) await round(s);
const samples = new Map<Side, Sample[]>(sides.map((s) => [s, []]));
for (let r = 0; r < rounds; r++) {
  for (const s of r % 2 === 0 ? sides : [...sides].reverse()) (samples.get(s) as Sample[]).push(await round(s));
  process.stderr.write(`[bounds] round ${r + 1}/${rounds}\n`);
}
for (const s of sides) {
  await Promise.all(s.conns.map((c) => c.close()));
  await s.proc.stop();
}

const echoSamples = samples.get(sides[sides.length - 1] as Side) as Sample[];
const fmt = (n: number, digits: number): string => n.toFixed(digits);
const lines = [
  `${CONNECTIONS} connections each awaiting its own transcript/append (write), ${rounds} rounds of up to ${RATE.maxCount} calls or ${RATE.maxMs} ms per build, order alternating; medians.`,
  'build | leaves out | rate | vs echo, median (range) | CPU/append | main thread',
  '---|---|---|---|---|---',
];
for (const s of sides) {
  const mine = samples.get(s) as Sample[];
  const ratios = mine.map((m, i) => m.rate / (echoSamples[i] as Sample).rate);
  lines.push(
    `${s.name} | ${s.leavesOut} | ${fmt(median(mine.map((m) => m.rate)) / 1000, 1)}k/s | ${fmt(median(ratios), 2)} × (${fmt(Math.min(...ratios), 2)}–${fmt(Math.max(...ratios), 2)}) | ` +
      `${fmt(median(mine.map((m) => m.cpuUs)), 1)} µs | ${fmt(median(mine.map((m) => m.mainUs)), 1)} µs`,
  );
}
process.stdout.write(`${lines.join('\n')}\n`);
