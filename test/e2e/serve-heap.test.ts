// The heap setting `serve` applies to itself (issue 11 item 3): chosen without any flag from the
// host, left alone when node was started with one, and reported in the "serving" log line. Its
// effect on memory is a measurement (bench/memory.bench.ts), not a test.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import test from 'node:test';
import { HEAP_GROWING_PERCENT, heapSettingsFor } from '../../src/commands/serve-heap.js';
import type { Child } from '../helpers/cli.js';
import { CLI, REPO, serveSocket, waitForStderr } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 30_000;

test('serve sets the growing percent itself when node was started without one', () => {
  assert.deepEqual(heapSettingsFor([]), { growingPercent: HEAP_GROWING_PERCENT, source: 'serve' });
  assert.deepEqual(heapSettingsFor(['--enable-source-maps', '--cpu-prof']), { growingPercent: HEAP_GROWING_PERCENT, source: 'serve' });
});

test('a growing percent given to node, in any spelling, is left as given', () => {
  for (const argv of [['--heap-growing-percent=50'], ['--heap_growing_percent=50'], ['--heap-growing-percent', '50']]) {
    assert.deepEqual(heapSettingsFor(argv), { growingPercent: 50, source: 'node-flag' }, argv.join(' '));
  }
});

/** The heap settings the "serving" JSON log line of `c` reports. */
async function servingHeap(c: Pick<Child, 'child' | 'stderr' | 'exited'>): Promise<unknown> {
  const m = await waitForStderr(c as Child, /^\{.*"msg":"serving".*\}$/m);
  return (JSON.parse(m[0]) as { heap?: unknown }).heap;
}

test('the spawned serve reports the setting it applied, with no flag from its host', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const server = await serveSocket(t, path.join(dir, 'state.json'), path.join(dir, 's.sock'), ['--log-format', 'json']);
  assert.deepEqual(await servingHeap(server), { growingPercent: HEAP_GROWING_PERCENT, source: 'serve' });
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
});

test('a host that starts node with its own growing percent keeps it', { timeout: TIMEOUT }, async (t) => {
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
  assert.deepEqual(await servingHeap(c), { growingPercent: 60, source: 'node-flag' });
  child.kill('SIGTERM');
  assert.deepEqual(await exited, { code: 0, signal: null });
});
