// `npm test` runs every test/*/*.test.ts in a few long-lived processes (test/shards/*.ts, one per
// core) instead of one process per file: a process with the tsx loader and our modules loaded
// costs ~0.6 s of CPU, and ~50 files made that most of the suite's time on a 2-core machine.
//
// Each shard process takes the next test file nobody has taken yet (claimed with an O_EXCL file
// in a folder named after the `node --test` process both shards are children of), runs it, and
// takes the next, so the shards stay balanced however long a file runs. Biggest files first, so
// the run does not end waiting for one long file. A header test "file <path>" precedes each
// file's tests in the report (an import error fails that header). Files of one shard share a
// process: a test must not leave global state (env, cwd, listeners) behind — none does today.
// No file can hang the suite: each file's tests run inside a suite named after the file with a
// timeout (FILE_TIMEOUT_MS, or HERRSCHER_TEST_FILE_TIMEOUT_MS), so a test that never ends fails
// its file and the shard goes on; `npm test` also bounds each shard process (--test-timeout) and
// exits once the tests are done even if a leaked handle would keep the process up
// (--test-force-exit).
// Running one file on its own is unchanged: `node --import tsx --test test/e2e/watch.test.ts`.
import { AsyncResource } from 'node:async_hooks';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TEST_DIR = path.join(REPO, 'test');
const SHARD_DIR = path.join(TEST_DIR, 'shards');

/** A whole file's time limit: far above the slowest file on a loaded 2-core machine. */
export const FILE_TIMEOUT_MS = Number(process.env.HERRSCHER_TEST_FILE_TIMEOUT_MS) || 10 * 60_000;

/** test/*\/*.test.ts, as the glob `npm test` used before; biggest first. */
function testFiles(): string[] {
  const files = readdirSync(TEST_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'shards')
    .flatMap((d) => readdirSync(path.join(TEST_DIR, d.name)).filter((f) => f.endsWith('.test.ts')).map((f) => path.join(TEST_DIR, d.name, f)));
  const size = new Map(files.map((f) => [f, statSync(f).size]));
  return files.sort((a, b) => (size.get(b) as number) - (size.get(a) as number) || a.localeCompare(b));
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
  const files = testFiles();
  const shards = shardEntries();
  const id = runId();
  if (id === undefined) {
    // Without /proc: a fixed split by the entry file's position.
    const index = shards.indexOf(path.basename(fileURLToPath(entryUrl)));
    const mine = files.filter((_f, i) => i % shards.length === index);
    return () => mine.shift();
  }
  const dir = path.join(os.tmpdir(), `herrscher-state-test-claims-${id}`);
  mkdirSync(dir, { recursive: true });
  let next = 0;
  let done = false;
  return () => {
    while (next < files.length) {
      const i = next++;
      try {
        closeSync(openSync(path.join(dir, String(i)), 'wx'));
        return files[i];
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    if (!done) {
      done = true;
      // The last shard to run out removes the claims (with --test-concurrency=1 the shards run
      // one after another, and the later one must still find every file taken).
      writeFileSync(path.join(dir, `done-${process.pid}`), '');
      if (readdirSync(dir).filter((n) => n.startsWith('done-')).length >= shards.length) rmSync(dir, { recursive: true, force: true });
    }
    return undefined;
  };
}

/**
 * Runs test files in this process until none is left. Call it from a test/shards/*.ts entry with
 * that entry's import.meta.url.
 */
export function runShard(entryUrl: string): void {
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
          await import(pathToFileURL(file).href);
        }));
      } finally {
        top.runInAsyncScope(registerNext);
      }
    });
  };
  registerNext();
}
