// When the writer thread dies or cannot be started: every caller whose write or replace it held
// (or would have held) is told why, nothing is answered twice or left waiting, and what was still
// waiting goes to a new thread. Node gives no way to make a healthy thread fail on cue, so the
// tests end it as the process would see it: terminated (its 'exit'), an uncaught error in it (its
// 'error', then 'exit'), or a thread the system refuses (the Worker constructor throws) — the last
// two through `Worker` swapped in node:worker_threads, which the module's import follows
// (syncBuiltinESMExports).
import assert from 'node:assert/strict';
import { existsSync, openSync, closeSync, readFileSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import type { Worker as WorkerType } from 'node:worker_threads';
import { WriterThread } from '../../src/store/writer-thread.js';
import { stalledPipe } from '../helpers/stalled-pipe.js';
import { tempDir } from '../helpers/temp-dir.js';

const threads = createRequire(import.meta.url)('node:worker_threads') as { Worker: typeof WorkerType };
const RealWorker = threads.Worker;
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
const opts = { mode: 0o600, sync: false };

/** Runs `fn` with `Worker` replaced by `make(realArgs)`; the real one is back afterwards, whatever happens. */
function swapWorker(replacement: typeof RealWorker): () => void {
  threads.Worker = replacement;
  syncBuiltinESMExports();
  return () => {
    threads.Worker = RealWorker;
    syncBuiltinESMExports();
  };
}

/** Records the threads started while it listens, and the exit of each (listened for from its start). */
function watchThreads(): { started: WorkerType[]; exited: Promise<unknown>[]; stop(): void } {
  const started: WorkerType[] = [];
  const exited: Promise<unknown>[] = [];
  const add = (w: WorkerType): void => {
    started.push(w);
    exited.push(new Promise((r) => w.once('exit', r)));
  };
  process.on('worker', add);
  return { started, exited, stop: () => process.off('worker', add) };
}

const refused = (): Error => Object.assign(new Error('the system refused a thread'), { code: 'ERR_WORKER_INIT_FAILED' });
class RefusedWorker extends RealWorker {
  constructor(..._args: ConstructorParameters<typeof RealWorker>) {
    throw refused();
    super('');
  }
}
const isRefused = (e: NodeJS.ErrnoException): boolean => e.code === 'ERR_WORKER_INIT_FAILED' && e.message === refused().message;

test('a thread that cannot be started: each write and replace asked for is rejected with why; the next ones start a thread', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const file = openSync(path.join(dir, 'f'), 'a');
  const writer = new WriterThread();
  const restore = swapWorker(RefusedWorker);
  try {
    const results = await Promise.allSettled([
      writer.replace(path.join(dir, 'one.json'), 'one', opts),
      writer.replace(path.join(dir, 'two.json'), 'two', opts),
      writer.write(file, Buffer.from('a\n')),
      writer.write(file, Buffer.from('b\n')),
    ]);
    for (const r of results) {
      assert.equal(r.status, 'rejected');
      assert.ok(isRefused((r as PromiseRejectedResult).reason), String((r as PromiseRejectedResult).reason));
    }
    assert.equal(writer.idle, true, 'nothing is left waiting');
    restore();
    const [n] = await Promise.all([writer.write(file, Buffer.from('c\n')), writer.replace(path.join(dir, 'two.json'), 'two', opts)]);
    assert.equal(n, 2);
    assert.equal(readFileSync(path.join(dir, 'f'), 'utf8'), 'c\n');
    assert.equal(readFileSync(path.join(dir, 'two.json'), 'utf8'), 'two');
    assert.equal(existsSync(path.join(dir, 'one.json')), false);
  } finally {
    restore();
    closeSync(file);
  }
});

test('a thread that ends with a batch and a replace out: both are rejected with why, the replaces waiting are posted again', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const file = openSync(path.join(dir, 'f'), 'a');
  const pipe = stalledPipe();
  const seen = watchThreads();
  const writer = new WriterThread();
  let restore = (): void => {};
  try {
    const held = writer.write(pipe.fd, Buffer.from('held\n'));
    await turn();
    const out = writer.replace(path.join(dir, 'out.json'), 'out', opts);
    let idleWhenLost: boolean | undefined;
    out.catch(() => (idleWhenLost = writer.idle));
    const waiting = [writer.replace(path.join(dir, 'two.json'), 'two', opts), writer.replace(path.join(dir, 'three.json'), 'three', opts)];
    assert.equal(seen.started.length, 1);
    // The thread ends while the pipe holds it in its write(2); it ends there once drained, before
    // it answers. A new thread is refused at first: the replaces waiting learn why.
    restore = swapWorker(RefusedWorker);
    void seen.started[0]!.terminate();
    const settled = Promise.allSettled([held, out, ...waiting]);
    // The thread may end before it even started the write: then no byte comes.
    await pipe.release(5, settled);
    const [h, o, two, three] = await settled;
    for (const r of [h, o]) {
      assert.equal(r?.status, 'rejected');
      assert.match(((r as PromiseRejectedResult).reason as Error).message, /the writer thread exited \(code \d+\) with writes unanswered/);
    }
    assert.equal(idleWhenLost, false, 'the replaces waiting are not forgotten when the one out is rejected');
    for (const r of [two, three]) {
      assert.equal(r?.status, 'rejected');
      assert.ok(isRefused((r as PromiseRejectedResult).reason));
    }
    restore();
    await writer.replace(path.join(dir, 'two.json'), 'two', opts);
    assert.equal(await writer.write(file, Buffer.from('after\n')), 6);
    assert.equal(readFileSync(path.join(dir, 'two.json'), 'utf8'), 'two');
    assert.equal(readFileSync(path.join(dir, 'f'), 'utf8'), 'after\n');
    assert.equal(seen.started.length, 2);
  } finally {
    restore();
    seen.stop();
    await pipe.release(5).catch(() => {});
    closeSync(file);
  }
});

test('a thread that fails (an uncaught error) rejects what it held with that error; what waited lands on the next thread, which the old one\'s exit leaves alone', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const file = openSync(path.join(dir, 'f'), 'a');
  const seen = watchThreads();
  let made = 0;
  // The first thread throws as it starts; the ones after it are real.
  class FailsFirst extends RealWorker {
    constructor(...args: ConstructorParameters<typeof RealWorker>) {
      if (made++ === 0) super('throw new Error("the thread failed")', { eval: true });
      else super(...args);
    }
  }
  const restore = swapWorker(FailsFirst);
  try {
    const writer = new WriterThread();
    const out = writer.replace(path.join(dir, 'out.json'), 'out', opts);
    const outWrite = writer.write(file, Buffer.from('lost\n'));
    await turn();
    const waiting = [writer.write(file, Buffer.from('a\n')), writer.replace(path.join(dir, 'next.json'), 'next', opts)];
    const [o, w] = await Promise.allSettled([out, outWrite]);
    for (const r of [o, w]) {
      assert.equal(r.status, 'rejected');
      assert.equal(((r as PromiseRejectedResult).reason as Error).message, 'the thread failed');
    }
    await Promise.all(waiting);
    await seen.exited[0];
    assert.equal(await writer.write(file, Buffer.from('b\n')), 2);
    assert.equal(readFileSync(path.join(dir, 'f'), 'utf8'), 'a\nb\n');
    assert.equal(readFileSync(path.join(dir, 'next.json'), 'utf8'), 'next');
    assert.equal(seen.started.length, 2, 'the failed thread\'s exit did not drop the thread that replaced it');
  } finally {
    restore();
    seen.stop();
    closeSync(file);
  }
});

test('a thread that fails with only a replace out, then one with only a write out: each caller is told, and the next thread serves', { timeout: 20_000 }, async () => {
  const dir = tempDir();
  const file = openSync(path.join(dir, 'f'), 'a');
  const seen = watchThreads();
  let made = 0;
  // The first two threads throw as they start; the third is real.
  class FailsTwice extends RealWorker {
    constructor(...args: ConstructorParameters<typeof RealWorker>) {
      if (made++ < 2) super('throw new Error("the thread failed")', { eval: true });
      else super(...args);
    }
  }
  const restore = swapWorker(FailsTwice);
  const failed = (e: Error): boolean => e.message === 'the thread failed';
  try {
    const writer = new WriterThread();
    await assert.rejects(writer.replace(path.join(dir, 'one.json'), 'one', opts), failed);
    // Its exit comes after its error, with no thread of the writer's left to drop.
    await seen.exited[0];
    await assert.rejects(writer.write(file, Buffer.from('lost\n')), failed);
    await seen.exited[1];
    assert.equal(await writer.write(file, Buffer.from('kept\n')), 5);
    await writer.replace(path.join(dir, 'one.json'), 'one', opts);
    assert.equal(readFileSync(path.join(dir, 'f'), 'utf8'), 'kept\n');
    assert.equal(readFileSync(path.join(dir, 'one.json'), 'utf8'), 'one');
    assert.equal(seen.started.length, 3);
  } finally {
    restore();
    seen.stop();
    closeSync(file);
  }
});
