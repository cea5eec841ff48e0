// Starting the writer thread's worker (writer-thread.ts): where its script is (beside the library,
// beside the CLI bundle, or compiled from the source under the tests), the memory it shares with the
// main thread, and the futex wake that hands it a batch.
import type { execFileSync as ExecFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { holdV8FlagDefaults } from '../common/v8-flag-hold.js';
import { CTL, PLAN_INTS } from './writer-worker-control.js';
import type { BatchAnswer, ReplaceAnswer, WriterWorkerData } from './writer-worker.js';
import { BATCH_BYTES, BATCH_JOBS } from './writer-thread-jobs.js';

/**
 * The worker's file name in the CLI bundle, which defines it (scripts/bundle-cli.mjs): its second
 * entry, dist/src/writer-worker.cjs, a CommonJS script, which a Worker starts for less CPU than an
 * ES module. Undefined elsewhere.
 */
declare const HS_WRITER_WORKER: string | undefined;

/**
 * The worker's module: beside this one (tsc's dist/src/store/writer-worker.js, the library), or
 * beside the CLI bundle (esbuild leaves `new URL(…, import.meta.url)` alone). Run from src/ (the
 * tests), the script compiled from the TypeScript source (sourceWorkerScript).
 */
function workerEntry(): { filename: string | URL; eval: boolean } {
  const bundled = typeof HS_WRITER_WORKER === 'string' ? HS_WRITER_WORKER : undefined;
  if (!import.meta.url.endsWith('.ts')) return { filename: new URL(bundled ?? './writer-worker.js', import.meta.url), eval: false };
  return { filename: sourceWorkerScript(), eval: true };
}

let sourceScript: string | undefined;

/**
 * Run from src/ by tsx, Node 20 applies no `--import` loader inside a worker: the worker's module
 * and what it imports are compiled into one CommonJS script by esbuild (a devDependency, as tsx is,
 * and what builds dist/src/writer-worker.cjs), once per process, and each worker evaluates it.
 * Registering tsx's require hook in each new thread instead cost ~175 ms of CPU per start against
 * ~45 ms, and the tests start ~25 threads. The esbuild binary runs as a child, not through the
 * esbuild module, whose synchronous calls start a worker thread of their own (a test counting the
 * threads a writer starts would count it).
 */
function sourceWorkerScript(): string {
  if (sourceScript === undefined) {
    const require = createRequire(import.meta.url);
    const { execFileSync } = require('node:child_process') as { execFileSync: typeof ExecFileSync };
    const esbuild = path.join(path.dirname(require.resolve('esbuild/package.json')), 'bin', 'esbuild');
    const entry = fileURLToPath(new URL('./writer-worker.ts', import.meta.url));
    sourceScript = execFileSync(esbuild, [entry, '--bundle', '--platform=node', '--format=cjs', '--target=node20', '--log-level=warning'], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
  }
  return sourceScript;
}

/** A running worker and its view of a batch: the bytes, and one fd and one length per job. */
export interface Thread {
  readonly worker: Worker;
  readonly ctl: Int32Array;
  readonly bytes: Buffer;
  readonly plan: Int32Array;
}

/**
 * Starts a worker, unreferenced: `answered` hears each answer it sends, `lost` its failure or
 * exit, with the worker it was about (a thread already replaced is no longer the current one).
 */
export function startThread(answered: (answer: BatchAnswer | ReplaceAnswer) => void, lost: (worker: Worker, err: Error) => void): Thread {
  const ctl = new SharedArrayBuffer(CTL.LENGTH * Int32Array.BYTES_PER_ELEMENT);
  const bytes = new SharedArrayBuffer(BATCH_BYTES);
  const plan = new SharedArrayBuffer(BATCH_JOBS * PLAN_INTS * Int32Array.BYTES_PER_ELEMENT);
  const entry = workerEntry();
  const workerData: WriterWorkerData = { ctl, bytes, plan };
  // V8 flags set at run time (serve's heap settings) would make the worker compile node's
  // built-in modules without node's code cache (~30 ms of CPU): they are held at V8's defaults
  // until the worker has loaded, which its first answer (or its end) shows (common/v8-flag-hold.ts).
  const release = holdV8FlagDefaults();
  let worker: Worker;
  try {
    worker = new Worker(entry.filename, {
      eval: entry.eval,
      workerData,
      // Not the parent's flags (a loader such as tsx, --input-type): it needs none of them.
      // Stryker disable next-line ArrayDeclaration: a list with a word that is no flag starts the same worker
      execArgv: [],
      // It holds no more than one batch at a time: a small heap keeps the process's RSS down.
      // Stryker disable next-line ObjectLiteral: without the bound only the memory differs (bench/)
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
    });
  } catch (err) {
    release();
    throw err;
  }
  worker.on('message', (answer: BatchAnswer | ReplaceAnswer) => {
    release();
    answered(answer);
  });
  // A worker that fails takes its unanswered batches with it: each caller learns why, and the
  // next write starts a new worker.
  worker.on('error', (err) => {
    release();
    lost(worker, err);
  });
  worker.on('exit', (code) => {
    release();
    lost(worker, new Error(`the writer thread exited (code ${code}) with writes unanswered`));
  });
  // After the listeners: adding a 'message' listener refs the worker again (Node 20). It is
  // started by the first write, not ahead: starting it with the store cost spawn-to-first-reply
  // ~13 ms (1.61 × → 1.79 × the bare server), and the first append pays its 30–80 ms once.
  worker.unref();
  return { worker, ctl: new Int32Array(ctl), bytes: Buffer.from(bytes), plan: new Int32Array(plan) };
}

/** Wakes the worker for what was just posted (a futex wake, no message: writer-worker.ts, serve). */
export function wake(thread: Thread): void {
  Atomics.add(thread.ctl, CTL.WAKE, 1);
  Atomics.notify(thread.ctl, CTL.WAKE);
}
