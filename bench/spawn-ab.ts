// `node --import tsx bench/spawn-ab.ts [N] [BIN…]`: spawn to first reply of several builds side by
// side, for an A/B of a start-up change (docs/performance.md, "Spawn to first reply"). Each round
// starts every side once, in turn: the bare vscode-jsonrpc stdio server (the ceiling of row
// spawn.first-reply) and `node BIN serve --stdio` on a fresh state dir (BIN: the build's
// dist/src/cli.js when none is given; a copy of another build's dist/ beside a package.json and a
// node_modules link runs as well). Prints per side the median ms from spawn() to the initialize
// reply, its ratio to the bare server's median, and the CPU the process had used when it answered
// (all threads, from /proc/PID/task/*/schedstat in ns: median and mean; less noisy than wall time
// on a shared machine). With several BINs, also each one's difference to the first, start by
// start (the same round, so a slow minute hits both): median CPU and wall differences.
// Not part of `npm run bench`: a diagnosis tool; the row of record is spawn.first-reply.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { CLI, ECHO_SERVER, REPO } from './harness/config.js';
import { rpcOverStdio } from './harness/rpc.js';
import { readdirSync, readFileSync } from 'node:fs';
import { median, nowUs } from './harness/stats.js';
import { tempDir } from './harness/temp-dir.js';

const rounds = Number(process.argv[2] ?? 30);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`usage: bench/spawn-ab.ts [rounds ≥ 1] [BIN…]; got ${process.argv[2]}`);
const bins = process.argv.length > 3 ? process.argv.slice(3).map((b) => path.resolve(b)) : [CLI];
const dir = tempDir('hs-spawn-ab-');

interface Side {
  name: string;
  args: (seq: number) => string[];
  ms: number[];
  cpuMs: number[];
}

const sides: Side[] = [
  { name: 'bare vscode-jsonrpc server', args: () => [ECHO_SERVER, '--stdio'], ms: [], cpuMs: [] },
  ...bins.map((bin): Side => ({
    name: bin.startsWith(`${REPO}${path.sep}`) ? path.relative(REPO, bin) : bin,
    args: (seq) => [bin, 'serve', '--stdio', '--state', path.join(dir, `s${seq}`, 'state.json'), '--durability', 'sync', '--log-level', 'warn'],
    ms: [],
    cpuMs: [],
  })),
];

/** CPU ms the threads of `pid` alive now have run (schedstat's first field, ns). */
function cpuMsOf(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return ns / 1e6;
}

/** One start of `side`: ms to the initialize reply and the CPU used by then; then stdin EOF ends it. */
async function once(side: Side, seq: number): Promise<void> {
  const t0 = nowUs();
  const child: ChildProcess = spawn(process.execPath, side.args(seq), { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const rpc = rpcOverStdio(child.stdout as NodeJS.ReadableStream, child.stdin as NodeJS.WritableStream);
  await rpc.request('initialize', { clientInfo: { name: 'spawn-ab' } });
  side.ms.push((nowUs() - t0) / 1000);
  side.cpuMs.push(cpuMsOf(child.pid as number));
  await rpc.close();
  await exited;
}

let seq = 0;
for (let r = 0; r < rounds; r++) for (const side of sides) await once(side, ++seq);

const bare = median((sides[0] as Side).ms);
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const bareCpu = median((sides[0] as Side).cpuMs);
for (const s of sides) {
  const ms = median(s.ms);
  const cpu = median(s.cpuMs);
  console.log(
    `${s.name.padEnd(44)} ${ms.toFixed(1).padStart(7)} ms  ${(ms / bare).toFixed(2)}×   cpu ${cpu.toFixed(1).padStart(6)} ms  ${(cpu / bareCpu).toFixed(2)}× (mean ${mean(s.cpuMs).toFixed(1)})`,
  );
}
const [, first, ...others] = sides;
for (const s of first ? others : []) {
  const less = (xs: number[], ys: number[]): number[] => xs.map((x, i) => x - (ys[i] as number));
  console.log(
    `${s.name.padEnd(44)} − ${first?.name}: cpu ${median(less(s.cpuMs, first?.cpuMs ?? [])).toFixed(1)} ms, wall ${median(less(s.ms, first?.ms ?? [])).toFixed(1)} ms (medians of the differences, round by round)`,
  );
}
console.log(`${rounds} rounds; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
