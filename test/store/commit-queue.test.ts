// The commit queue on its own: batches form while a commit runs, tasks run alone between batches,
// every job settles with its own batch's outcome, and settled() waits for what was queued meanwhile.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CommitQueue } from '../../src/store/commit-queue.js';

/** A promise with its resolve, so a test decides when a commit finishes. */
function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

test('jobs pushed while a commit runs are committed together as the next batch, in push order', async () => {
  const batches: number[][] = [];
  const first = gate();
  const q = new CommitQueue<number>({
    async commit(batch) {
      batches.push(batch);
      if (batches.length === 1) await first.promise;
    },
  });
  const done = [q.push(1)];
  await tick();
  done.push(q.push(2), q.push(3), q.push(4));
  first.open();
  await Promise.all(done);
  assert.deepEqual(batches, [[1], [2, 3, 4]]);
});

test('a task runs after every job pushed before it and before every job pushed after it', async () => {
  const events: string[] = [];
  const hold = gate();
  const q = new CommitQueue<string>({
    async commit(batch) {
      events.push(`commit ${batch.join(',')}`);
      await hold.promise;
    },
  });
  const a = q.push('a');
  const b = q.push('b');
  const t = q.exclusive(async () => {
    events.push('task');
    return 42;
  });
  const c = q.push('c');
  hold.open();
  await Promise.all([a, b, c]);
  assert.equal(await t, 42);
  assert.deepEqual(events, ['commit a', 'commit b', 'task', 'commit c']);
});

test('a commit that throws rejects every job of its batch with that error, and the next batch still commits', async () => {
  const boom = new Error('EIO');
  const hold = gate();
  let calls = 0;
  const q = new CommitQueue<number>({
    async commit() {
      calls++;
      if (calls === 1) {
        await hold.promise;
        throw boom;
      }
    },
  });
  const first = q.push(1);
  await tick();
  const second = q.push(2);
  hold.open();
  await assert.rejects(first, (err) => err === boom);
  await second;
  assert.equal(calls, 2);
});

test('a commit may fail single jobs by returning one error per job', async () => {
  const bad = new Error('refused');
  const q = new CommitQueue<number>({ commit: async (batch) => batch.map((n) => (n % 2 ? bad : undefined)) });
  const outcomes = await Promise.allSettled([q.push(1), q.push(2), q.push(3)]);
  assert.deepEqual(outcomes.map((o) => o.status), ['rejected', 'fulfilled', 'rejected']);
  assert.equal((outcomes[0] as PromiseRejectedResult).reason, bad);
});

test('a task that throws rejects only its caller; the queue goes on', async () => {
  const committed: number[] = [];
  const q = new CommitQueue<number>({ commit: async (batch) => void committed.push(...batch) });
  const t = q.exclusive(async () => {
    throw new Error('task failed');
  });
  const after = q.push(7);
  await assert.rejects(t, /task failed/);
  await after;
  assert.deepEqual(committed, [7]);
});

test('batchSize cuts a batch: the rest forms the next one', async () => {
  const batches: number[][] = [];
  const hold = gate();
  const q = new CommitQueue<number>({
    async commit(batch) {
      batches.push(batch);
      await hold.promise;
    },
    batchSize: (waiting) => waiting.findIndex((n) => n >= 10) + 1 || waiting.length,
  });
  const p = [q.push(1)];
  await tick();
  p.push(q.push(2), q.push(10), q.push(3), q.push(4));
  hold.open();
  await Promise.all(p);
  assert.deepEqual(batches, [[1], [2, 10], [3, 4]]);
});

test('settled() waits for jobs queued while it waits, and idle says when nothing runs', async () => {
  const committed: number[] = [];
  const q = new CommitQueue<number>({
    async commit(batch) {
      committed.push(...batch);
      if (batch[0] === 1) void q.push(2); // queued by the commit itself, after settled() was called
    },
  });
  assert.equal(q.idle, true);
  void q.push(1);
  assert.equal(q.idle, false);
  await q.settled();
  assert.deepEqual(committed, [1, 2]);
  assert.equal(q.idle, true);
});

test('waiting() lists the jobs queued behind the committing batch', async () => {
  const hold = gate();
  let seen: number[] = [];
  const q = new CommitQueue<number>({
    async commit(batch) {
      if (batch[0] === 1) {
        await hold.promise;
        seen = q.waiting();
      }
    },
  });
  const p = [q.push(1)];
  await tick();
  p.push(q.push(2), q.push(3));
  hold.open();
  await Promise.all(p);
  assert.deepEqual(seen, [2, 3]);
});

test('waiting() lists only jobs, never a task queued among them (the state store re-applies each one)', async () => {
  const hold = gate();
  let seen: number[] = [];
  const q = new CommitQueue<number>({
    async commit(batch) {
      if (batch[0] === 1) {
        await hold.promise;
        seen = q.waiting();
      }
    },
  });
  const p: Promise<unknown>[] = [q.push(1)];
  await tick();
  p.push(q.push(2), q.exclusive(async () => 'task'), q.push(3));
  hold.open();
  await Promise.all(p);
  assert.deepEqual(seen, [2, 3]);
});

test('batchSize is shown only the jobs before the next task, and is not asked about a single job', async () => {
  const hold = gate();
  const shown: number[][] = [];
  const batches: number[][] = [];
  const q = new CommitQueue<number>({
    async commit(batch) {
      batches.push(batch);
      if (batch[0] === 1) await hold.promise;
    },
    batchSize: (waiting) => {
      shown.push([...waiting]);
      return waiting.length;
    },
  });
  const p: Promise<unknown>[] = [q.push(1)];
  await tick();
  p.push(q.push(2), q.push(3), q.exclusive(async () => 'task'), q.push(4), q.push(5));
  hold.open();
  await Promise.all(p);
  assert.deepEqual(batches, [[1], [2, 3], [4, 5]]);
  assert.deepEqual(shown, [[2, 3], [4, 5]]);
});

// ---- gathering (gatherMs) ------------------------------------------------------------------

/**
 * `callers` callers, each pushing jobs one after another with a round trip (a turn) between an
 * answer and the next push, as a client over a socket; caller 0, which starts alone, pushes one
 * more, so every caller ends in the same batch. Returns the batch sizes committed.
 */
async function lockstep(callers: number, rounds: number, gatherMs?: () => number): Promise<number[]> {
  const sizes: number[] = [];
  const q = new CommitQueue<string>({
    async commit(batch) {
      sizes.push(batch.length);
      await tick(); // the write
    },
    ...(gatherMs ? { gatherMs } : {}),
  });
  await Promise.all(Array.from({ length: callers }, async (_, c) => {
    for (let r = 0; r < rounds + (c === 0 ? 1 : 0); r++) {
      await q.push(`${c}.${r}`);
      await tick(); // the reply's way back and the next request's way in
    }
  }));
  return sizes;
}

test('without gathering, callers answered by one commit miss the next: the batches alternate', async () => {
  const sizes = await lockstep(4, 6);
  assert.equal(sizes.reduce((a, b) => a + b, 0), 25);
  assert.ok(sizes.slice(1).some((n) => n < 4), `some batch after the first holds fewer than the 4 callers: ${sizes}`);
});

test('with gathering, a batch waits for the callers the last one answered: one commit answers all of them', async (t) => {
  // Timers only move when the test says: a batch that did not wait for its callers (but for the
  // budget) cannot happen by accident, and one that waited for the budget would hang the test.
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const sizes = await lockstep(4, 6, () => 50);
  assert.deepEqual(sizes, [1, 4, 4, 4, 4, 4, 4], 'the first job starts alone (nobody was seen before it), then all 4 each time');
});

test('a lone caller never waits, whatever the budget', { timeout: 10_000 }, async () => {
  const sizes = await lockstep(1, 5, () => 60_000);
  assert.deepEqual(sizes, [1, 1, 1, 1, 1, 1]);
});

test('a crowd that shrank is waited for once, up to the budget; then the queue goes by the callers it saw last', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const sizes: number[] = [];
  const q = new CommitQueue<string>({
    async commit(batch) {
      sizes.push(batch.length);
    },
    gatherMs: () => 50,
  });
  // Four callers once: [a], then b, c, d wait for a fourth that never comes, until the budget.
  const four = ['a', 'b', 'c', 'd'].map((j) => q.push(j));
  await four[0];
  await tick();
  assert.deepEqual(sizes, [1], 'b, c and d wait for the crowd of 4');
  t.mock.timers.tick(50);
  await Promise.all(four);
  assert.deepEqual(sizes, [1, 3]);
  // The crowd is now 3: a lone job waits once more, then the queue has seen one caller.
  const x = q.push('x');
  await tick();
  assert.deepEqual(sizes, [1, 3], 'x waits for the crowd of 3');
  t.mock.timers.tick(50);
  await x;
  await q.push('y'); // no tick: it does not wait
  assert.deepEqual(sizes, [1, 3, 1, 1]);
});

test('a batch never waits across a task', { timeout: 10_000 }, async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const events: string[] = [];
  const q = new CommitQueue<string>({
    async commit(batch) {
      events.push(`commit ${batch.join(',')}`);
      await tick();
    },
    gatherMs: () => 60_000,
  });
  const first = [q.push('a'), q.push('b'), q.push('c')];
  await first[0];
  await tick();
  t.mock.timers.tick(60_000); // b and c waited for a third caller that never came
  await Promise.all(first);
  // The crowd is 2 now, so d alone would wait: the task behind it ends the wait at once (no
  // timer moves from here on).
  const d = q.push('d');
  const task = q.exclusive(async () => {
    events.push('task');
  });
  await Promise.all([d, task]);
  assert.deepEqual(events, ['commit a', 'commit b,c', 'commit d', 'task']);
});
