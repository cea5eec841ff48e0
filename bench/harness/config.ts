// How long and how often every bench may measure, decided in one place so that `--quick`
// (BENCH_QUICK=1, set by bench/run.ts) shrinks the whole run alike and no loop is unbounded.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// Where NODE_EXTRA_CA_CERTS names a CA bundle, every node process parses it before its first line
// runs (~40 ms of CPU for the 140 certificates of Debian's bundle): the same on both sides of a
// spawn row, so it pulled the ratio towards 1 (spawn.first-reply: 1.22 × with it, 1.46 × without)
// and measured the machine instead of the server. No process the bench starts makes a TLS
// connection. Every bench entry imports this module before it starts anything, and each child
// inherits the environment.
delete process.env.NODE_EXTRA_CA_CERTS;
/**
 * The built server (`npm run build` makes it): the bench measures what users run, not tsx.
 * bench/run.ts points BENCH_CLI at its own copy of dist/, so a rebuild during the run (npm test
 * rebuilds) cannot mix two builds in one table.
 */
export const CLI = process.env.BENCH_CLI ?? path.join(REPO, 'dist/src/cli.js');
export const ECHO_SERVER = path.join(REPO, 'bench/fixtures/echo-server.mjs');
/** The SQLite ceiling, measured by python3's standard-library sqlite3 (no compiler needed). */
export const SQLITE_CEILING = path.join(REPO, 'bench/fixtures/sqlite-ceiling.py');
export const LOAD_CLIENT = path.join(REPO, 'bench/fixtures/load-client.ts');
export const RESULTS_DIR = path.join(REPO, 'bench/results');
export const PROFILE_DIR = path.join(RESULTS_DIR, 'prof');

/** A smoke run: same code paths, small N, so a test can run the whole thing in about a minute. */
export const QUICK = process.env.BENCH_QUICK === '1';
/** Run our server under --cpu-prof (profiles land in bench/results/prof). */
export const PROFILE = process.env.BENCH_PROFILE === '1';

/** Medians of at least 3; 5 in a full run because single runs on this machine vary by ±30 %. */
export const REPS = QUICK ? 3 : 5;
/** One discarded repetition first, so JIT warm-up and first file creation do not land in a sample. */
export const WARMUP_REPS = QUICK ? 0 : 1;

export interface Bounds {
  /** Stop issuing after this many calls… */
  maxCount: number;
  /** …or after this many milliseconds, whichever comes first. */
  maxMs: number;
}

/** One caller awaiting each call: enough calls for a stable p99 (2000 → 20 above it). */
export const LATENCY: Bounds = QUICK ? { maxCount: 200, maxMs: 150 } : { maxCount: 2000, maxMs: 1500 };
/**
 * Throughput runs. One repetition appends at most LATENCY.maxCount + this + this/64 (+ primes)
 * entries of 205 bytes to the busiest transcript ("one"): 18 250 lines, 3.7 MB, below the
 * 4 MiB that triggers compaction, so no repetition measures a compaction the others do not.
 */
export const RATE: Bounds = QUICK ? { maxCount: 2000, maxMs: 150 } : { maxCount: 16_000, maxMs: 1500 };
/** Per-call latency of reads and small writes: short calls, so fewer are needed. */
export const READ_LATENCY: Bounds = QUICK ? { maxCount: 100, maxMs: 100 } : { maxCount: 1000, maxMs: 1000 };
/** Spawn-to-first-reply samples per side and repetition (their median is the sample): ~150 ms each. */
export const SPAWNS_PER_REP = QUICK ? 1 : 3;

/** The append every load pattern sends: a typical assistant entry, 205 bytes as a line. */
export const ENTRY = {
  ts: '2026-07-26T00:00:05Z',
  role: 'assistant',
  text: 'Done: the failing test now passes; I also removed the unused import it complained about.',
  cost: 0.004,
  tokens_in: 30,
  tokens_out: 55,
  dur_ms: 4200,
};
