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
import { CLI, RATE, REPO } from './harness/config.js';
import type { AppendSample } from './harness/append-rounds.js';
import { alternatingRounds } from './harness/append-rounds.js';
import type { Rpc } from './harness/rpc.js';
import { connectClient, connectRpc } from './harness/rpc.js';
import type { SocketProc } from './harness/servers.js';
import { startEcho, startServer } from './harness/servers.js';
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

const samples = await alternatingRounds(sides, rounds, 'bounds');
for (const s of sides) {
  await Promise.all(s.conns.map((c) => c.close()));
  await s.proc.stop();
}

const echoSamples = samples.get(sides[sides.length - 1] as Side) as AppendSample[];
const fmt = (n: number, digits: number): string => n.toFixed(digits);
const lines = [
  `${CONNECTIONS} connections each awaiting its own transcript/append (write), ${rounds} rounds of up to ${RATE.maxCount} calls or ${RATE.maxMs} ms per build, order alternating; medians.`,
  'build | leaves out | rate | vs echo, median (range) | CPU/append | main thread',
  '---|---|---|---|---|---',
];
for (const s of sides) {
  const mine = samples.get(s) as AppendSample[];
  const ratios = mine.map((m, i) => m.rate / (echoSamples[i] as AppendSample).rate);
  lines.push(
    `${s.name} | ${s.leavesOut} | ${fmt(median(mine.map((m) => m.rate)) / 1000, 1)}k/s | ${fmt(median(ratios), 2)} × (${fmt(Math.min(...ratios), 2)}–${fmt(Math.max(...ratios), 2)}) | ` +
      `${fmt(median(mine.map((m) => m.cpuUs)), 1)} µs | ${fmt(median(mine.map((m) => m.mainUs)), 1)} µs`,
  );
}
process.stdout.write(`${lines.join('\n')}\n`);
