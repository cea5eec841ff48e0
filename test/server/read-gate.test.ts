// The read gate (src/server/read-gate.ts) over a stub output flow whose unsent bytes the test
// sets: reads start while fewer than MAX_RUNNING_READS run and at most MAX_UNSENT_REPLY_BYTES
// wait to be sent; past that they queue in arrival order, and the gate asks the flow once to be
// told when it drained. A closed flow never holds a read back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_RUNNING_READS, MAX_UNSENT_REPLY_BYTES, ReadGate } from '../../src/server/read-gate.js';
import type { OutputFlow } from '../../src/transport/framed-writer.js';

/** A flow whose unsent bytes and closed state the test sets; `drain()` answers the gate's waits. */
function stubFlow(unsent: number) {
  const waits: { bytes: number; resolve: () => void }[] = [];
  const flow: OutputFlow & { bytes: number; closed: boolean } = {
    bytes: unsent,
    closed: false,
    unsentBytes: () => flow.bytes,
    unsentFrames: () => 0,
    isClosed: () => flow.closed,
    whenUnsentAtMost: (bytes: number) => new Promise<void>((resolve) => waits.push({ bytes, resolve })),
  };
  const drain = async (to: number): Promise<void> => {
    flow.bytes = to;
    for (const w of waits.splice(0)) w.resolve();
    await new Promise((r) => setImmediate(r));
  };
  return { flow, waits, drain };
}

/** Enters `gate` `n` times; `entered` lists the indices that got in, in order. */
function enterMany(gate: ReadGate, n: number, entered: number[], from = 0): Promise<void>[] {
  return Array.from({ length: n }, (_, i) => gate.enter().then(() => void entered.push(from + i)));
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

test(`reads start while at most ${MAX_UNSENT_REPLY_BYTES} bytes are unsent; past that they wait, asking the flow once, and go in order once it drained`, async () => {
  const { flow, waits, drain } = stubFlow(MAX_UNSENT_REPLY_BYTES);
  const gate = new ReadGate(flow);
  const entered: number[] = [];
  await Promise.all(enterMany(gate, 1, entered));
  assert.deepEqual(entered, [0], 'exactly at the bound: the read starts');
  gate.leave();
  flow.bytes = MAX_UNSENT_REPLY_BYTES + 1;
  const waiting = enterMany(gate, 3, entered, 1);
  await turn();
  assert.deepEqual(entered, [0], 'one byte past the bound: they wait');
  assert.deepEqual(waits.map((w) => w.bytes), [MAX_UNSENT_REPLY_BYTES], 'the flow is asked once, for the bound');
  await drain(MAX_UNSENT_REPLY_BYTES + 1);
  assert.deepEqual(entered, [0], 'told of a drain that did not go far enough: still waiting, and asked again');
  assert.equal(waits.length, 1);
  await drain(0);
  await Promise.all(waiting);
  assert.deepEqual(entered, [0, 1, 2, 3]);
  for (let i = 0; i < 3; i++) gate.leave();
});

test('a read that arrives while others queue goes behind them, even when it could start itself', async () => {
  const { flow } = stubFlow(MAX_UNSENT_REPLY_BYTES + 1);
  const gate = new ReadGate(flow);
  const entered: number[] = [];
  const first = enterMany(gate, 2, entered);
  await turn();
  assert.deepEqual(entered, []);
  flow.bytes = 0; // room now, and the gate not told: the next arrival lets the queue go first
  const last = enterMany(gate, 1, entered, 2);
  await Promise.all([...first, ...last]);
  assert.deepEqual(entered, [0, 1, 2]);
});

test('a closed flow holds no read back, whatever it says is unsent', async () => {
  const { flow, waits } = stubFlow(10 * MAX_UNSENT_REPLY_BYTES);
  flow.closed = true;
  const gate = new ReadGate(flow);
  const entered: number[] = [];
  await Promise.all(enterMany(gate, 2, entered));
  assert.deepEqual(entered, [0, 1]);
  assert.equal(waits.length, 0);
});

test(`the running count bounds reads with room in the flow; a full gate does not ask the flow to drain`, async () => {
  const { flow, waits } = stubFlow(0);
  const gate = new ReadGate(flow);
  const entered: number[] = [];
  const all = enterMany(gate, MAX_RUNNING_READS + 1, entered);
  await turn();
  assert.equal(entered.length, MAX_RUNNING_READS);
  assert.equal(waits.length, 0, 'waiting for a slot, not for the flow');
  gate.leave();
  await Promise.all(all);
  assert.equal(entered.length, MAX_RUNNING_READS + 1);
});

test('a read that waits for the flow and for a slot starts once both are free', async () => {
  const { flow, waits, drain } = stubFlow(0);
  const gate = new ReadGate(flow);
  const entered: number[] = [];
  const running = enterMany(gate, MAX_RUNNING_READS, entered);
  await Promise.all(running);
  flow.bytes = MAX_UNSENT_REPLY_BYTES + 1;
  const queued = enterMany(gate, 1, entered, MAX_RUNNING_READS);
  await turn();
  assert.equal(waits.length, 0, 'no slot: the flow is not asked');
  gate.leave();
  await turn();
  assert.equal(entered.length, MAX_RUNNING_READS, 'a slot, but the flow is full');
  assert.equal(waits.length, 1, 'now the flow is asked');
  await drain(0);
  await Promise.all(queued);
  assert.equal(entered.length, MAX_RUNNING_READS + 1);
});

test('a read that starts at once, and leaves, never asks the flow to drain', async () => {
  const { flow, waits } = stubFlow(0);
  const gate = new ReadGate(flow);
  await gate.enter();
  gate.leave();
  await gate.enter();
  gate.leave();
  assert.equal(waits.length, 0);
});
