// `npm run build && node --import tsx bench/append-latency.ts [rounds] [cli.js…]`: the lone append's
// latency (row `append.sync.1conn.p50.serial`: one connection awaiting each `transcript/append`)
// for one or more builds side by side, against the row's reference measured in the same rounds (a
// bare echo round trip, then a raw write + fdatasync in this process). Each build's server runs at
// once; after one discarded round, rounds of LATENCY's calls alternate the builds' order (and the
// reference's place), so every build sees the same moment's load. Prints per build the median and
// range over the rounds of each round's p50, of its ratio to the reference's p50 in the same round,
// and of its ratio to the first build's. BENCH_INTERLEAVE=1 (two builds) alternates their calls
// within each round instead (a shared disk's fdatasync varies more between rounds than builds
// differ). BENCH_DURABILITY=write measures `--durability write` against the bare echo alone;
// TMPDIR=/dev/shm puts the state dirs on tmpfs. Not part of `npm run bench`: it diagnoses
// (docs/performance.md, "The lone durable append's latency").
import path from 'node:path';
import { CLI, ENTRY, LATENCY } from './harness/config.js';
import { fdatasyncLatency } from './harness/disk.js';
import type { Call } from './harness/load.js';
import { awaitEach, awaitEachAlternating, prime } from './harness/load.js';
import type { Rpc } from './harness/rpc.js';
import { connectClient, connectRpc } from './harness/rpc.js';
import type { SocketProc } from './harness/servers.js';
import { startEcho, startServer } from './harness/servers.js';
import { median } from './harness/stats.js';
import { tempDir } from './harness/temp-dir.js';
import { mkdirSync } from 'node:fs';

const rounds = Number(process.argv[2] ?? 10);
// One round appends at most LATENCY.maxCount entries of 205 bytes: 60 rounds stay below the 4 MiB
// that triggers a compaction, so every round measures steady appends.
if (!Number.isInteger(rounds) || rounds < 1 || rounds > 60) throw new Error(`usage: bench/append-latency.ts [rounds 1–60] [cli.js…]; got ${process.argv[2]}`);
const clis = process.argv.length > 3 ? process.argv.slice(3).map((p) => path.resolve(p)) : [CLI];
const durability = process.env.BENCH_DURABILITY === 'write' ? 'write' : 'sync';

const dir = tempDir('hs-append-latency-');
const rawDir = path.join(dir, 'raw');
mkdirSync(rawDir);

interface Side {
  name: string;
  call: Call;
  proc?: SocketProc;
}

const procs: SocketProc[] = [];
const conns: Rpc[] = [];
const sides: Side[] = [];
for (const [i, cli] of clis.entries()) {
  const proc = await startServer(`append-latency-${i}`, path.join(dir, `state-${i}/state.json`), path.join(dir, `${i}.sock`), durability, { cli });
  const admin = await connectClient(proc.socket);
  await admin.sessionAdd({ session: { name: 'one' } });
  await admin.close();
  const rpc = await connectRpc(proc.socket);
  procs.push(proc);
  conns.push(rpc);
  sides.push({ name: cli, proc, call: () => rpc.request('transcript/append', { name: 'one', entry: ENTRY }) });
}
const echo = await startEcho('append-latency-echo', path.join(dir, 'echo.sock'));
const echoRpc = await connectRpc(echo.socket);
const echoCall: Call = () => echoRpc.request('transcript/append', { name: 'one', entry: ENTRY });
const reference: Side = {
  name: durability === 'sync' ? 'echo round trip + raw write+fdatasync' : 'bare echo',
  call: echoCall,
};
/** Per build, the server's CPU (utime + stime) per append over every timed round, µs. */
const cpu = new Map<Side, { seconds: number; calls: number }>(sides.map((s) => [s, { seconds: 0, calls: 0 }]));
let timed = false;
const measure = async (s: Side): Promise<number> => {
  if (s.proc) {
    const cpu0 = s.proc.cpuSeconds();
    const r = await awaitEach(s.call, LATENCY);
    const c = cpu.get(s) as { seconds: number; calls: number };
    if (timed) {
      c.seconds += s.proc.cpuSeconds() - cpu0;
      c.calls += r.count;
    }
    return r.p50;
  }
  if (durability === 'write') return (await awaitEach(echoCall, LATENCY)).p50;
  return (await fdatasyncLatency(rawDir, LATENCY, echoCall)).p50;
};

const all = [...sides, reference];
for (const s of all) {
  await prime([s.call]);
  await measure(s);
}
timed = true;
const p50s = new Map<Side, number[]>(all.map((s) => [s, []]));
const ratios = new Map<Side, number[]>(sides.map((s) => [s, []]));
/**
 * With two builds and BENCH_INTERLEAVE=1, their calls alternate within each round (ABBA), so
 * both see the same moment's disk: a shared disk's fdatasync varies more between rounds than
 * the builds differ.
 */
const interleave = process.env.BENCH_INTERLEAVE === '1' && sides.length === 2;
const measureRound = async (order: Side[]): Promise<Map<Side, number>> => {
  const got = new Map<Side, number>();
  if (!interleave) {
    for (const s of order) got.set(s, await measure(s));
    return got;
  }
  const [a, b] = sides as [Side, Side];
  got.set(reference, await measure(reference));
  const cpu0 = [a, b].map((s) => s.proc?.cpuSeconds() ?? 0);
  const [la, lb] = await awaitEachAlternating(a.call, b.call, LATENCY);
  for (const [i, [s, l]] of ([[a, la], [b, lb]] as const).entries()) {
    const c = cpu.get(s) as { seconds: number; calls: number };
    c.seconds += (s.proc?.cpuSeconds() ?? 0) - (cpu0[i] as number);
    c.calls += l.count;
  }
  got.set(a, la.p50).set(b, lb.p50);
  return got;
};
/** Per build, its p50 over the first build's in the same round. */
const overFirst = new Map<Side, number[]>(sides.map((s) => [s, []]));
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? all : [...all].reverse();
  const got = await measureRound(order);
  for (const s of sides) (overFirst.get(s) as number[]).push((got.get(s) as number) / (got.get(sides[0] as Side) as number));
  for (const s of all) (p50s.get(s) as number[]).push(got.get(s) as number);
  for (const s of sides) (ratios.get(s) as number[]).push((got.get(s) as number) / (got.get(reference) as number));
  process.stderr.write(`[append-latency] round ${r + 1}/${rounds}\n`);
}
await echoRpc.close();
await Promise.all(conns.map((c) => c.close()));
await Promise.all([...procs, echo].map((p) => p.stop()));

const range = (xs: number[], digits: number): string =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
const lines = [
  `1 connection awaiting each transcript/append (${durability}), ${rounds} rounds of up to ${LATENCY.maxCount} calls or ${LATENCY.maxMs} ms per side, `
  + `${interleave ? 'the two builds\' calls alternating within each round' : 'order alternating'}; median (range) of the rounds' p50.`,
  'side | p50 µs | × reference | × first build | server CPU/append µs',
  '---|---|---|---|---',
];
for (const s of sides) {
  const c = cpu.get(s) as { seconds: number; calls: number };
  lines.push(`${s.name} | ${range(p50s.get(s) as number[], 0)} | ${range(ratios.get(s) as number[], 2)} | ${range(overFirst.get(s) as number[], 2)} | ${((c.seconds * 1e6) / c.calls).toFixed(0)}`);
}
lines.push(`${reference.name} | ${range(p50s.get(reference) as number[], 0)} | 1 | — | —`);
process.stdout.write(`${lines.join('\n')}\n`);
