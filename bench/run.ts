// `npm run bench`: runs every bench/*.bench.ts in its own process (as pino's runbench does, so
// one bench's servers, heap and JIT state never colour another's), collects the one JSON line
// each prints, and prints ONE table of our numbers, their ceilings, the ratios and the
// targets (bench/targets.ts), plus bench/results/latest.json. Targets are reported, never enforced: the exit code
// is non-zero only when a bench itself failed.
//
// usage: node --import tsx bench/run.ts [--quick] [--profile] [NAME…]
//   --quick    smoke run: 3 short repetitions, no warm-up (what a test can afford); writes
//              bench/results/quick.json instead of latest.json
//   --profile  run our server under --cpu-prof (also BENCH_PROFILE=1); see bench/results/prof/;
//              writes profile.json
//   NAME       only bench/NAME.bench.ts (e.g. append, reads); writes partial.json
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { PROFILE_DIR, REPO, RESULTS_DIR } from './harness/config.js';
import type { BenchResult, Row } from './harness/report.js';
import type { Target } from './targets.js';
import { TARGETS } from './targets.js';

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: { quick: { type: 'boolean', default: false }, profile: { type: 'boolean', default: false } },
});
const quick = values.quick ?? false;
const profile = (values.profile ?? false) || process.env.BENCH_PROFILE === '1';
/** A full bench takes 1–3 minutes; past this something is stuck, and the bench is killed. */
const BENCH_TIMEOUT_MS = quick ? 120_000 : 360_000;

const benchDir = path.join(REPO, 'bench');
const all = readdirSync(benchDir)
  .filter((f) => f.endsWith('.bench.ts'))
  .sort();
const files = positionals.length ? all.filter((f) => positionals.includes(f.replace(/\.bench\.ts$/, ''))) : all;
if (files.length === 0) {
  console.error(`no bench matches ${positionals.join(', ')}; there are: ${all.map((f) => f.replace(/\.bench\.ts$/, '')).join(', ')}`);
  process.exit(2);
}
if (profile) mkdirSync(PROFILE_DIR, { recursive: true });

// One build for the whole run: dist/ is copied to a temp dir beside a copy of package.json (its
// "type": "module" makes the .js files ESM) and a link to node_modules, and every bench spawns
// that copy. Outside the repo, so lint and tsc never see it.
const builtDist = path.join(REPO, 'dist');
if (!existsSync(path.join(builtDist, 'src/cli.js'))) {
  console.error('dist/src/cli.js is missing: run npm run build first');
  process.exit(2);
}
const snapshot = mkdtempSync(path.join(os.tmpdir(), 'hs-bench-dist-'));
process.on('exit', () => rmSync(snapshot, { recursive: true, force: true }));
cpSync(builtDist, path.join(snapshot, 'dist'), { recursive: true });
cpSync(path.join(REPO, 'package.json'), path.join(snapshot, 'package.json'));
symlinkSync(path.join(REPO, 'node_modules'), path.join(snapshot, 'node_modules'), 'dir');
const cli = path.join(snapshot, 'dist/src/cli.js');

interface Outcome {
  file: string;
  result?: BenchResult;
  error?: string;
  load1Before: number;
}

/** Runs one bench in its own process group, so a timeout can end it and every server it started. */
function runBench(file: string): Promise<Outcome> {
  const load1Before = os.loadavg()[0] as number;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(benchDir, file)], {
      cwd: REPO,
      env: { ...process.env, BENCH_QUICK: quick ? '1' : '0', BENCH_PROFILE: profile ? '1' : '0', BENCH_CLI: cli },
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    current = child.pid;
    const out: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    const timer = setTimeout(() => {
      console.error(`[run] ${file} took longer than ${BENCH_TIMEOUT_MS / 1000} s: killing it`);
      process.kill(-(child.pid as number), 'SIGKILL');
    }, BENCH_TIMEOUT_MS);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      current = undefined;
      const lines = Buffer.concat(out).toString('utf8').trim().split('\n');
      const last = lines[lines.length - 1] ?? '';
      if (code !== 0) return resolve({ file, load1Before, error: `exited with ${code ?? signal}` });
      try {
        resolve({ file, load1Before, result: JSON.parse(last) as BenchResult });
      } catch {
        resolve({ file, load1Before, error: `printed no JSON result line (last line: ${JSON.stringify(last.slice(0, 200))})` });
      }
    });
  });
}

// ---- formatting --------------------------------------------------------------------------

function fmt(value: number | undefined, unit: Row['unit']): string {
  if (value === undefined || !Number.isFinite(value)) return '—';
  switch (unit) {
    case 'req/s':
    case 'ops/s':
      return value >= 1000 ? `${(value / 1000).toFixed(1)}k/s` : `${value.toFixed(0)}/s`;
    case 'µs':
      return value >= 10_000 ? `${(value / 1000).toFixed(1)} ms` : `${value.toFixed(0)} µs`;
    case 'ms':
      return `${value.toFixed(0)} ms`;
    case 'MB':
      return `${value.toFixed(1)} MB`;
  }
}

interface TableRow {
  id: string;
  bench: string;
  measurement: string;
  unit: Row['unit'];
  ours: number;
  ceiling?: number;
  ceilingLabel?: string;
  ratio?: number;
  target?: Target;
  met?: boolean;
}

function judge(row: Omit<TableRow, 'target' | 'met'>): TableRow {
  const target = TARGETS[row.id];
  if (!target) return row;
  const value = target.on === 'ratio' ? row.ratio : row.ours;
  const met = value === undefined ? false : target.op === '>=' ? value >= target.value : value <= target.value;
  return { ...row, target, met };
}

function targetText(t: Target | undefined, unit: Row['unit']): string {
  if (!t) return '';
  const op = t.op === '>=' ? '≥' : '≤';
  return t.on === 'ratio' ? `${op} ${t.value}×` : `${op} ${fmt(t.value, unit)}`;
}

function printTable(rows: TableRow[]): void {
  const cells = rows.map((r) => [
    r.ceilingLabel ? `${r.measurement} — vs ${r.ceilingLabel}` : r.measurement,
    fmt(r.ours, r.unit),
    fmt(r.ceiling, r.unit),
    r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}×`,
    targetText(r.target, r.unit),
    r.met === undefined ? '' : r.met ? 'met' : 'MISSED',
  ]);
  const head = ['measurement', 'ours', 'ceiling', 'ratio', 'target', 'met?'];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] as string).length)));
  const line = (c: string[]): string => c.map((x, i) => (i === 0 ? x.padEnd(widths[i] as number) : x.padStart(widths[i] as number))).join(' | ');
  console.log(line(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
  for (const c of cells) console.log(line(c));
}

// ---- run ---------------------------------------------------------------------------------

// The benches run in their own process groups, which a terminal's Ctrl-C does not reach.
let current: number | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (current !== undefined) process.kill(-current, 'SIGKILL');
    process.exit(130);
  });
}

const started = Date.now();
const commit = gitCommit();
const outcomes: Outcome[] = [];
for (const file of files) {
  console.error(`[run] ${file}${quick ? ' (quick)' : ''}, load average ${os.loadavg()[0]?.toFixed(2)}`);
  outcomes.push(await runBench(file));
}

const rows: TableRow[] = [];
for (const o of outcomes) {
  for (const r of o.result?.rows ?? []) {
    rows.push(judge({ id: r.id, bench: o.result?.bench ?? o.file, measurement: r.measurement, unit: r.unit, ours: r.ours.median, ceiling: r.ceiling?.median, ceilingLabel: r.ceilingLabel, ratio: r.ratio?.median }));
  }
}
const memory = outcomes.flatMap((o) => o.result?.memory ?? []);
if (memory.length) {
  const top = memory.reduce((a, b) => (b.rssMB > a.rssMB ? b : a));
  rows.push(judge({ id: 'server.rss', bench: 'all', measurement: `server RSS after the run (largest: ${top.server}; ${top.startRssMB === undefined ? '' : `${top.startRssMB.toFixed(0)} MB once started, `}peak ${top.hwmMB.toFixed(0)} MB)`, unit: 'MB', ours: top.rssMB }));
}

console.log('');
printTable(rows);
if (positionals.length === 0) {
  const measured = new Set(rows.map((r) => r.id));
  const unmeasured = Object.keys(TARGETS).filter((id) => !measured.has(id));
  if (unmeasured.length) console.log(`\nTargets without a row in this run (a bench failed or skipped it): ${unmeasured.join(', ')}`);
}
const failed = outcomes.filter((o) => o.error);
for (const o of failed) console.log(`\nFAILED ${o.file}: ${o.error}`);
const busy = outcomes.filter((o) => o.load1Before > 1.5);
if (busy.length) {
  console.log(`\nThe machine was busy (1-min load average ${busy.map((o) => `${o.load1Before.toFixed(1)} before ${o.file}`).join(', ')}): other work shared the 2 cores, so absolute numbers are low and ratios noisier.`);
}
console.log(`\nMedians of ${quick ? 3 : 5} repetitions${quick ? ' (quick: short runs, no warm-up; a smoke test, not a measurement)' : ' after one discarded warm-up repetition'}; each ratio is the median of per-repetition ratios of the pair, measured back to back in the same process.`);
for (const o of outcomes) for (const n of o.result?.notes ?? []) console.log(`- ${o.result?.bench}: ${n}`);
const met = rows.filter((r) => r.met === true).length;
const judged = rows.filter((r) => r.met !== undefined).length;
if (profile) console.log('\n--profile: our server ran under --cpu-prof, which slows it; its ratios are not the measurement.');
console.log(`\nTargets met: ${met}/${judged}. ${((Date.now() - started) / 1000).toFixed(0)} s in all.${profile ? ` CPU profiles: ${path.relative(REPO, PROFILE_DIR)}/` : ''}`);

/** The commit measured, marked "+dirty" when src/ had uncommitted changes (others edit it live). */
function gitCommit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: REPO, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head}+dirty` : head;
  } catch {
    return 'unknown';
  }
}

mkdirSync(RESULTS_DIR, { recursive: true });
// Only a full, unprofiled run of every bench is the measurement; anything else must not
// overwrite it.
const latest = path.join(RESULTS_DIR, quick ? 'quick.json' : profile ? 'profile.json' : positionals.length ? 'partial.json' : 'latest.json');
writeFileSync(
  latest,
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      quick,
      profile,
      commit,
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      seconds: (Date.now() - started) / 1000,
      table: rows,
      benches: outcomes.map((o) => ({ file: o.file, load1Before: o.load1Before, error: o.error, result: o.result })),
    },
    null,
    2,
  )}\n`,
);
console.log(`Wrote ${path.relative(REPO, latest)} (commit ${commit.slice(0, 12)}${commit.endsWith('+dirty') ? '+dirty' : ''}).`);
process.exitCode = failed.length ? 1 : 0;
