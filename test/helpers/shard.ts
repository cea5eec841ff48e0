// `npm test` runs every test/*/*.test.ts in a few long-lived processes (test/shards/*.ts: three,
// one more than the 2 cores CI has, since a shard waits on its children's servers part of the
// time) instead of one process per file: a process with the tsx loader and our modules loaded
// costs ~0.6 s of CPU, and ~50 files made that most of the suite's time on a 2-core machine.
//
// Each shard process takes the next test file nobody has taken yet (claimed with an O_EXCL file
// in a folder named after the `node --test` process both shards are children of), runs it, and
// takes the next, so the shards stay balanced however long a file runs. Longest files first, so
// the run does not end with one shard waiting for the other's long file: the order is the wall
// time each file took in this checkout's last run (kept in the temp folder, see `durations`),
// files never timed before first and by size. A header test "file <path>" precedes each
// file's tests in the report (an import error fails that header). Files of one shard share a
// process: a test must not leave global state (env, cwd, listeners) behind — none does today.
// No file can hang the suite: each file's tests run inside a suite named after the file with a
// timeout (FILE_TIMEOUT_MS, or HERRSCHER_TEST_FILE_TIMEOUT_MS), so a test that never ends fails
// its file and the shard goes on; `npm test` also bounds each shard process (--test-timeout) and
// exits once the tests are done even if a leaked handle would keep the process up
// (--test-force-exit).
// Running one file on its own is unchanged: `node --import tsx --test test/e2e/watch.test.ts`.
import { AsyncResource } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runFileEnd } from './file-end.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TEST_DIR = path.join(REPO, 'test');
const SHARD_DIR = path.join(TEST_DIR, 'shards');

/** A whole file's time limit: far above the slowest file on a loaded 2-core machine. */
export const FILE_TIMEOUT_MS = Number(process.env.HERRSCHER_TEST_FILE_TIMEOUT_MS) || 10 * 60_000;

/**
 * The wall time each file took when it last ran in this checkout, one small file per test file in
 * a folder of the temp dir named after the user and the checkout. Only the order of the files
 * depends on it: a missing, stale or unreadable entry costs at most some wall time.
 */
const DURATIONS_DIR = path.join(os.tmpdir(), `herrscher-state-test-durations-${process.getuid?.() ?? 'u'}-${createHash('sha256').update(REPO).digest('hex').slice(0, 12)}`);
/** A test file's path as one file name (claims and durations). */
const entryName = (rel: string): string => rel.replaceAll('/', '__');

function durations(): Map<string, number> {
  const known = new Map<string, number>();
  let names: string[];
  try {
    names = readdirSync(DURATIONS_DIR);
  } catch {
    return known; // never run here
  }
  for (const name of names) {
    try {
      const ms = Number(readFileSync(path.join(DURATIONS_DIR, name), 'utf8'));
      if (Number.isFinite(ms)) known.set(name, ms);
    } catch {
      // being replaced by a run finishing now: this file keeps the size order
    }
  }
  return known;
}

function recordDuration(rel: string, ms: number): void {
  try {
    mkdirSync(DURATIONS_DIR, { recursive: true, mode: 0o700 });
    const file = path.join(DURATIONS_DIR, entryName(rel));
    writeFileSync(`${file}.${process.pid}.tmp`, String(Math.round(ms)));
    renameSync(`${file}.${process.pid}.tmp`, file);
  } catch (err) {
    process.stderr.write(`test shard: could not keep ${rel}'s duration for the next run's order (${String(err)})\n`);
  }
}

/**
 * test/*\/*.test.ts, as the glob `npm test` used before. Longest last time first, files with no
 * time yet before them (biggest first); with `timed` false, biggest first (the static split needs
 * one order in every shard).
 */
function testFiles(timed: boolean): string[] {
  const files = readdirSync(TEST_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'shards')
    .flatMap((d) => readdirSync(path.join(TEST_DIR, d.name)).filter((f) => f.endsWith('.test.ts')).map((f) => path.join(TEST_DIR, d.name, f)));
  const known = timed ? durations() : new Map<string, number>();
  const took = new Map(files.map((f) => [f, known.get(entryName(path.relative(REPO, f)))]));
  const size = new Map(files.map((f) => [f, statSync(f).size]));
  const unknownFirst = (f: string): number => (took.get(f) === undefined ? Infinity : (took.get(f) as number));
  return files.sort((a, b) => unknownFirst(b) - unknownFirst(a) || (size.get(b) as number) - (size.get(a) as number) || a.localeCompare(b));
}

/**
 * With HERRSCHER_TEST_CPU_LOG naming a file, each file's CPU is appended to it as one JSON line:
 * this process's (all its threads) and that of the children it reaped while the file ran (with
 * theirs, as the kernel sums them: a child killed by a signal counts once reaped, a detached one
 * never reaped does not), in ms. How docs/testing.md's per-file figures are measured.
 */
const CPU_LOG = process.env.HERRSCHER_TEST_CPU_LOG;

/** This process's CPU and its reaped children's, in ms, from /proc (undefined without it). */
function cpuTimes(): { self: number; children: number } | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const [utime, stime, cutime, cstime] = stat.slice(stat.lastIndexOf(')') + 2).split(' ').slice(11, 15).map(Number) as [number, number, number, number];
    const tick = 10; // ms: Linux reports these in USER_HZ, 100 a second
    return { self: (utime + stime) * tick, children: (cutime + cstime) * tick };
  } catch {
    return undefined;
  }
}

function logCpu(rel: string, wallMs: number, before: ReturnType<typeof cpuTimes>): void {
  const now = cpuTimes();
  if (CPU_LOG === undefined || before === undefined || now === undefined) return;
  const line = { file: rel, wallMs: Math.round(wallMs), endedAt: Date.now(), selfMs: now.self - before.self, childrenMs: now.children - before.children, pid: process.pid };
  writeFileSync(CPU_LOG, `${JSON.stringify(line)}\n`, { flag: 'a' });
}

const shardEntries = (): string[] => readdirSync(SHARD_DIR).filter((f) => f.endsWith('.ts')).sort();

/** The parent's pid and start time: the same for every shard of one run, never for two runs. */
function runId(): string | undefined {
  try {
    const stat = readFileSync(`/proc/${process.ppid}/stat`, 'utf8');
    const startTime = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return startTime ? `${process.ppid}-${startTime}` : undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // no /proc: static split
    throw err;
  }
}

/** A function that returns the next file this shard runs, or undefined when none is left. */
function claimer(entryUrl: string): () => string | undefined {
  const shards = shardEntries();
  const id = runId();
  if (id === undefined) {
    // Without /proc: a fixed split by the entry file's position.
    const index = shards.indexOf(path.basename(fileURLToPath(entryUrl)));
    const mine = testFiles(false).filter((_f, i) => i % shards.length === index);
    return () => mine.shift();
  }
  // Claimed by name, so shards that read the durations at different moments (another run of this
  // checkout finishing meanwhile) and order the files differently still run each file once.
  const files = testFiles(true);
  const dir = path.join(os.tmpdir(), `herrscher-state-test-claims-${id}`);
  mkdirSync(dir, { recursive: true });
  let next = 0;
  let done = false;
  return () => {
    while (next < files.length) {
      const i = next++;
      try {
        const file = files[i] as string;
        closeSync(openSync(path.join(dir, entryName(path.relative(REPO, file))), 'wx'));
        return file;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    if (!done) {
      done = true;
      // The last shard to run out removes the claims (with --test-concurrency=1 the shards run
      // one after another, and the later one must still find every file taken).
      // Two shards can run out at the same moment: the one that counts every mark removes the
      // folder, and the other then finds it gone, which is the same outcome.
      try {
        writeFileSync(path.join(dir, `done-${process.pid}`), '');
        if (readdirSync(dir).filter((n) => n.startsWith('done-')).length >= shards.length) rmSync(dir, { recursive: true, force: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return undefined;
  };
}

/**
 * Runs test files in this process until none is left. Call it from a test/shards/*.ts entry with
 * that entry's import.meta.url.
 */
export function runShard(entryUrl: string): void {
  // Where NODE_EXTRA_CA_CERTS names a CA bundle (as on machines that route through a TLS proxy),
  // every node process reads and parses it before its first line runs: ~40 ms of CPU each, a bare
  // `node -e 0` 60 ms instead of 20. The suite starts ~200 node processes (servers, CLI calls, and
  // those the Go and Python suites start), none of which makes a TLS connection.
  delete process.env.NODE_EXTRA_CA_CERTS;
  const take = claimer(entryUrl);
  // The suite is registered in this scope, a top-level suite, not a subtest of the header that
  // claims its file (which would cancel it when the header ends). A file is claimed only when its
  // header runs, so the shards stay balanced.
  const top = new AsyncResource('test-shard');
  const registerNext = (): void => {
    const file = take();
    if (file === undefined) return;
    const rel = path.relative(REPO, file);
    test(`file ${rel}`, () => {
      try {
        top.runInAsyncScope(() => describe(rel, { timeout: FILE_TIMEOUT_MS }, async () => {
          const started = performance.now();
          const cpuBefore = CPU_LOG === undefined ? undefined : cpuTimes();
          await import(pathToFileURL(file).href);
          // After the file's own root-level hooks: what they stop goes before its temp dirs, and
          // their cleanup counts in its time.
          after(() => {
            try {
              runFileEnd();
            } finally {
              recordDuration(rel, performance.now() - started);
              logCpu(rel, performance.now() - started, cpuBefore);
            }
          });
        }));
      } finally {
        top.runInAsyncScope(registerNext);
      }
    });
  };
  registerNext();
}
