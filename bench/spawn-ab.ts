// `node --import tsx bench/spawn-ab.ts [N] [BIN…]`: spawn to first reply of several builds side by
// side, for an A/B of a start-up change (docs/performance.md, "Spawn to first reply"). Each round
// starts every side once, in turn: the bare vscode-jsonrpc stdio server (the ceiling of row
// spawn.first-reply) and `node BIN serve --stdio` on a fresh state dir (BIN: the build's
// dist/src/cli.js when none is given; a copy of another build's dist/ beside a package.json and a
// node_modules link runs as well). Prints per side the median ms from spawn() to the initialize
// reply, its ratio to the bare server's median, and the mean CPU the process had used when it
// answered (user + system, all threads, in 10 ms clock ticks, hence a mean: less noisy than wall
// time on a shared machine).
// Not part of `npm run bench`: a diagnosis tool; the row of record is spawn.first-reply.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { CLI, ECHO_SERVER, REPO } from './harness/config.js';
import { rpcOverStdio } from './harness/rpc.js';
import { cpuSecondsOf } from './harness/servers.js';
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

/** One start of `side`: ms to the initialize reply and the CPU used by then; then stdin EOF ends it. */
async function once(side: Side, seq: number): Promise<void> {
  const t0 = nowUs();
  const child: ChildProcess = spawn(process.execPath, side.args(seq), { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const rpc = rpcOverStdio(child.stdout as NodeJS.ReadableStream, child.stdin as NodeJS.WritableStream);
  await rpc.request('initialize', { clientInfo: { name: 'spawn-ab' } });
  side.ms.push((nowUs() - t0) / 1000);
  side.cpuMs.push(cpuSecondsOf(`/proc/${child.pid}/stat`) * 1000);
  await rpc.close();
  await exited;
}

let seq = 0;
for (let r = 0; r < rounds; r++) for (const side of sides) await once(side, ++seq);

const bare = median((sides[0] as Side).ms);
const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const bareCpu = mean((sides[0] as Side).cpuMs);
for (const s of sides) {
  const ms = median(s.ms);
  const cpu = mean(s.cpuMs);
  console.log(`${s.name.padEnd(44)} ${ms.toFixed(1).padStart(7)} ms  ${(ms / bare).toFixed(2)}×   cpu ${cpu.toFixed(0).padStart(4)} ms  ${(cpu / bareCpu).toFixed(2)}×`);
}
console.log(`${rounds} rounds; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
