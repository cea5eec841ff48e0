// The heap settings `serve` applies to itself: chosen without any flag from the
// host, left alone when node was started with one, reported in the "serving" log line, and the
// young generation's hold in effect (V8 reports its size). Their effect on RSS is a measurement
// (bench/memory.bench.ts), not a test.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import test from 'node:test';
import { HEAP_GROWING_PERCENT, heapSettingsFor, YOUNG_SEMI_SPACE_MB } from '../../src/commands/heap-settings.js';
import type { Child } from '../helpers/cli.js';
import { CLI, REPO, serveSocket, waitForStderr } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 30_000;

const OURS = { growingPercent: HEAP_GROWING_PERCENT, youngSemiSpaceMb: YOUNG_SEMI_SPACE_MB };

test('serve sets both heap settings itself when node was started without them', () => {
  assert.deepEqual(heapSettingsFor([]), OURS);
  assert.deepEqual(heapSettingsFor(['--enable-source-maps', '--cpu-prof']), OURS);
});

test('a heap flag given to node, in any spelling, leaves the setting it concerns as given', () => {
  for (const argv of [['--heap-growing-percent=50'], ['--heap_growing_percent=50'], ['--heap-growing-percent', '50'], ['--max-old-space-size=512']]) {
    assert.deepEqual(heapSettingsFor(argv), { youngSemiSpaceMb: YOUNG_SEMI_SPACE_MB }, argv.join(' '));
  }
  for (const argv of [['--max-semi-space-size=4'], ['--semi_space_growth_factor=3']]) {
    assert.deepEqual(heapSettingsFor(argv), { growingPercent: HEAP_GROWING_PERCENT }, argv.join(' '));
  }
});

/** The largest new space (both semi-spaces) a churning process saw, with serve's settings or V8's. */
async function churn(which: 'serve' | 'serve-worker' | 'default'): Promise<{ largestNewSpace: number; flagsAfterWorker?: string[] }> {
  const child = spawn(process.execPath, [path.join(REPO, 'test/fixtures/young-generation.mjs'), which], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
  const out: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  assert.equal(code, 0);
  return JSON.parse(Buffer.concat(out).toString('utf8')) as { largestNewSpace: number; flagsAfterWorker?: string[] };
}

async function largestNewSpace(which: 'serve' | 'default'): Promise<number> {
  return (await churn(which)).largestNewSpace;
}

test('the young generation stops growing at two semi-spaces of YOUNG_SEMI_SPACE_MB, where V8 alone grows it past them', { timeout: TIMEOUT }, async () => {
  const cap = 2 * YOUNG_SEMI_SPACE_MB * 1024 * 1024;
  const [ours, v8s] = await Promise.all([largestNewSpace('serve'), largestNewSpace('default')]);
  assert.equal(ours, cap, 'grown to the cap and no further');
  assert.ok(v8s > cap, `V8's own growth passes it under the same churn (${v8s} bytes)`);
});

test('the hold outlives a Worker started once the young generation is at the cap (a new isolate resets V8\'s growth factor)', { timeout: TIMEOUT }, async () => {
  const cap = 2 * YOUNG_SEMI_SPACE_MB * 1024 * 1024;
  const { largestNewSpace: largest, flagsAfterWorker } = await churn('serve-worker');
  assert.equal(largest, cap);
  // The size alone misses a lost re-application whenever V8 shrank the young generation before
  // it grew again: both settings must be set again once the Worker is online.
  assert.ok(flagsAfterWorker?.includes('--semi-space-growth-factor=1'), `hold set again: ${JSON.stringify(flagsAfterWorker)}`);
  assert.ok(flagsAfterWorker?.includes(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`), `growing percent set again: ${JSON.stringify(flagsAfterWorker)}`);
});

/** The heap settings the "serving" JSON log line of `c` reports. */
async function servingHeap(c: Pick<Child, 'child' | 'stderr' | 'exited'>): Promise<unknown> {
  const m = await waitForStderr(c as Child, /^\{.*"msg":"serving".*\}$/m);
  return (JSON.parse(m[0]) as { heap?: unknown }).heap;
}

test('the spawned serve reports the setting it applied, with no flag from its host', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const server = await serveSocket(t, path.join(dir, 'state.json'), path.join(dir, 's.sock'), ['--log-format', 'json']);
  assert.deepEqual(await servingHeap(server), OURS);
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
});

test('a host that starts node with its own growing percent keeps it, and serve says so', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const child = spawn(process.execPath, ['--heap-growing-percent=60', CLI, 'serve', '--state', path.join(dir, 'state.json'), '--socket', socket, '--log-format', 'json'], {
    cwd: REPO,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  t.after(() => void child.kill('SIGKILL'));
  const err: Buffer[] = [];
  child.stderr.on('data', (c: Buffer) => err.push(c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const c = { child, exited, stderr: () => Buffer.concat(err).toString('utf8') };
  assert.deepEqual(await servingHeap(c), { youngSemiSpaceMb: YOUNG_SEMI_SPACE_MB });
  child.kill('SIGTERM');
  assert.deepEqual(await exited, { code: 0, signal: null });
});
