// The Go drop-in package (clients/go/state) against what Herrscher's Go package does in-process,
// measured from Go by clients/go/state/internal/bench: FindSession against the mutex-guarded
// slice scan, AppendTranscript against Go's O_APPEND write of the line, SetResumeToken against
// MarshalIndent + temp file + rename, and LoadState with no server running (the daemon's first
// start: the package starts the shared server) against a bare spawn of the server on a socket to
// its first answer. The `.floor` rows put the two writes beside their floor: one round trip to
// the same server over the Go client (a `status` call on a connection of its own to the same
// socket), then the same in-process operation. The package runs as Herrscher's daemon does (it
// holds Herrscher's lock; the state is served by the per-user shared server, started in `write`
// mode as the package starts it); the sync-mode rows use a dedicated `serve --durability sync`.
// Each pair is timed in alternating blocks of 100 calls.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { CLI, LATENCY, REPO, REPS, SPAWNS_PER_REP, WARMUP_REPS } from './harness/config.js';
import type { RowSpec } from './harness/report.js';
import { emit, progress, Samples, toRows } from './harness/report.js';
import { benchDirs } from './harness/temp-dir.js';

const BENCH = 'go-state';
const GO_DIR = path.join(REPO, 'clients/go');
const { dir } = benchDirs(BENCH);

if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) {
  emit({ bench: BENCH, rows: [], memory: [], notes: ['skipped: no `go` on PATH (the Go program is built at run time)'] });
  process.exit(0);
}

const bin = path.join(dir, 'go-state-bench');
progress(BENCH, 'building clients/go/state/internal/bench');
execFileSync('go', ['build', '-o', bin, './state/internal/bench'], { cwd: GO_DIR, stdio: ['ignore', 'ignore', 'inherit'] });
const runtime = path.join(dir, 'rt');
mkdirSync(runtime);
chmodSync(runtime, 0o700);
const work = path.join(dir, 'work');
mkdirSync(work);

const out = execFileSync(
  bin,
  ['-dir', work, '-reps', String(REPS), '-warmup', String(WARMUP_REPS), '-n', String(LATENCY.maxCount), '-spawns', String(SPAWNS_PER_REP)],
  {
    env: { ...process.env, HERRSCHER_STATE_BIN: CLI, XDG_RUNTIME_DIR: runtime, HERRSCHER_STATE_SOCKET: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    maxBuffer: 16 << 20,
    timeout: 300_000,
  },
);
const samples = new Samples();
for (const [key, values] of Object.entries(JSON.parse(out) as Record<string, number[]>)) for (const v of values) samples.add(key, v);

const specs: RowSpec[] = [
  { id: 'go-state.findSession.p50', measurement: 'Go package FindSession (replica), µs per 1 000 calls (median of batches)', unit: 'µs', ours: 'find.ours', ceiling: 'find.scan', ceilingLabel: "Go's in-process slice scan" },
  { id: 'go-state.appendTranscript.write.p50', measurement: 'Go package AppendTranscript (write), p50', unit: 'µs', ours: 'append.write', ceiling: 'append.raw', ceilingLabel: "Go's O_APPEND write of the line" },
  { id: 'go-state.appendTranscript.write.p50.floor', measurement: 'Go package AppendTranscript (write), p50', unit: 'µs', ours: 'append.write', ceiling: 'append.floor', ceilingLabel: 'a Go client round trip to the same server (status) + the O_APPEND write' },
  { id: 'go-state.appendTranscript.sync.p50', measurement: 'Go package AppendTranscript (sync, dedicated server), p50', unit: 'µs', ours: 'append.sync', ceiling: 'append.write', ceilingLabel: 'the same in write mode' },
  { id: 'go-state.appendTranscript.rowless.p50', measurement: 'Go package AppendTranscript (write) to a name without a session row, p50', unit: 'µs', ours: 'append.rowless', ceiling: 'append.withRow', ceilingLabel: 'the same with a session row' },
  { id: 'go-state.roundTrip.p50', measurement: 'Go client round trip to the shared server (status), p50', unit: 'µs', ours: 'roundTrip', ceiling: 'append.raw', ceilingLabel: "Go's O_APPEND write of the line" },
  { id: 'go-state.setResumeToken.write.p50', measurement: 'Go package SetResumeToken (write), p50', unit: 'µs', ours: 'token.write', ceiling: 'token.raw', ceilingLabel: "Go's MarshalIndent + temp file + rename" },
  { id: 'go-state.setResumeToken.write.p50.floor', measurement: 'Go package SetResumeToken (write), p50', unit: 'µs', ours: 'token.write', ceiling: 'token.floor', ceilingLabel: "a Go client round trip to the same server (status) + Go's MarshalIndent, temp file, rename" },
  { id: 'go-state.setResumeToken.sync.p50', measurement: 'Go package SetResumeToken (sync, dedicated server), p50', unit: 'µs', ours: 'token.sync', ceiling: 'token.write', ceilingLabel: 'the same in write mode' },
  { id: 'go-state.loadState.spawn', measurement: 'LoadState, no server running (the package starts the shared server): to its answer', unit: 'ms', ours: 'load.ours', ceiling: 'load.bare.socket', ceilingLabel: 'bare server spawn on a socket to first answer' },
];

emit({
  bench: BENCH,
  rows: toRows(samples, specs),
  memory: [],
  notes: [
    `${21} sessions; latency rows are p50 of ${LATENCY.maxCount} calls (SetResumeToken's: ${Math.max(LATENCY.maxCount / 2, 100)}; the sync rows: ${Math.max(LATENCY.maxCount / 10, 100)}, each waits for an fsync); FindSession is timed in batches of 1 000 calls (one call is ~0.1 µs). The package's server is the per-user shared server (write), as in Herrscher's daemon; the floor is a status round trip on a second connection to it.`,
  ],
});
