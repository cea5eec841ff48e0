// The writer thread holds the V8 flags set at run time (serve's heap settings) at V8's defaults
// from just before its Worker starts until that worker has answered or ended, so the worker
// compiles node's built-in modules with node's code cache (src/common/v8-flag-hold.ts). Recorded
// through registered flags that log each call, beside the thread's start (the 'worker' event).
import assert from 'node:assert/strict';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { Worker } from 'node:worker_threads';
import { registerRuntimeV8Flags, v8FlagsHeld } from '../../src/common/v8-flag-hold.js';
import { WriterThread } from '../../src/store/writer-thread.js';
import { tempDir } from '../helpers/temp-dir.js';

/** Registers flags that log each call into `calls`, and logs each Worker started; `stop` undoes both. */
function record(): { calls: string[]; workers: Worker[]; stop(): void } {
  const calls: string[] = [];
  const workers: Worker[] = [];
  registerRuntimeV8Flags({ toDefaults: () => calls.push('defaults'), apply: () => calls.push('apply') });
  const onWorker = (w: Worker): void => {
    calls.push(v8FlagsHeld() ? 'worker started, held' : 'worker started, not held');
    workers.push(w);
  };
  process.on('worker', onWorker);
  return { calls, workers, stop: () => (registerRuntimeV8Flags(undefined), process.off('worker', onWorker)) };
}

test('the flags are at their defaults while the thread starts, set again once it answered, and left alone by the writes after', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const file = openSync(path.join(dir, 'f'), 'a');
  const rec = record();
  try {
    const writer = new WriterThread();
    assert.equal(await writer.write(file, Buffer.from('a\n')), 2);
    assert.deepEqual(rec.calls, ['defaults', 'worker started, held', 'apply']);
    assert.equal(v8FlagsHeld(), false);
    await writer.replace(path.join(dir, 's.json'), '{}', { mode: 0o600, sync: false });
    assert.equal(await writer.write(file, Buffer.from('b\n')), 2);
    assert.deepEqual(rec.calls, ['defaults', 'worker started, held', 'apply'], 'one thread, one hold');
  } finally {
    rec.stop();
    closeSync(file);
  }
});

test('a thread that ends before it answered releases the hold too', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const file = openSync(path.join(dir, 'f'), 'a');
  const rec = record();
  try {
    const writer = new WriterThread();
    const out = writer.replace(path.join(dir, 's.json'), '{}', { mode: 0o600, sync: false });
    // Ended on the turn it started: long before it could have loaded and answered.
    await new Promise<void>((resolve) => process.once('worker', (w: Worker) => void w.terminate().then(() => resolve())));
    await assert.rejects(out, /the writer thread exited/);
    assert.deepEqual(rec.calls, ['defaults', 'worker started, held', 'apply']);
    assert.equal(v8FlagsHeld(), false);
  } finally {
    rec.stop();
    closeSync(file);
  }
});
