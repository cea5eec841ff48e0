// The write hold a backup fixes its copy under (src/server/write-hold.ts), over a stub `next`:
// it waits for the writes in flight, holds the writes that arrive meanwhile (in order) and never
// a read, and gives up, letting writes go, when the writes in flight do not finish in time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CancellationToken } from 'vscode-jsonrpc/node';
import type { Call, CallHandler } from '../../src/server/handler.js';
import { WriteHold } from '../../src/server/write-hold.js';
import { StoreError } from '../../src/store/store-error.js';

const read = (): Call => ({ method: 'session/list', params: {}, token: CancellationToken.None, write: false });
const write = (n: number): Call => ({ method: 'session/add', params: { n }, token: CancellationToken.None, write: true });

/** A `next` whose calls stay pending until released; `events` records what reached it. */
function held(events: string[]) {
  const started: { call: Call; release: () => void }[] = [];
  const next: CallHandler = (call) => new Promise((resolve) => {
    events.push(call.write ? `write ${(call.params as { n: number }).n}` : 'read');
    started.push({ call, release: () => resolve(undefined) });
  });
  return { next, started };
}

test('quiet runs once the writes in flight are answered, and holds later writes until it ends, in arrival order', async () => {
  const events: string[] = [];
  const hold = new WriteHold();
  const { next, started } = held(events);
  const h = hold.handler(next);
  const first = h(write(1));
  assert.deepEqual(events, ['write 1'], 'not held: dispatched in the same turn');
  let releaseFix!: () => void;
  const fixing = new Promise<void>((resolve) => (releaseFix = resolve));
  const quiet = hold.quiet(async () => {
    events.push('fix');
    await fixing;
    events.push('fixed');
    return 'copy';
  });
  const later = [h(write(2)), h(write(3))];
  const aRead = h(read());
  assert.deepEqual(events, ['write 1', 'read'], 'the fix waits for write 1; writes 2 and 3 wait; the read does not');
  started[0]?.release();
  await first;
  await new Promise<void>((resolve) => {
    const poll = (): void => (events.includes('fix') ? resolve() : void setImmediate(poll));
    poll();
  });
  assert.deepEqual(events, ['write 1', 'read', 'fix'], 'writes 2 and 3 are still held while the copy is fixed');
  releaseFix();
  assert.equal(await quiet, 'copy');
  await new Promise<void>((resolve) => {
    const poll = (): void => (events.length === 6 ? resolve() : void setImmediate(poll));
    poll();
  });
  assert.deepEqual(events, ['write 1', 'read', 'fix', 'fixed', 'write 2', 'write 3']);
  for (const s of started.slice(1)) s.release();
  await Promise.all([...later, aRead]);
  assert.equal(hold.inFlight, 0);
});

test('quiet gives up when the writes in flight outlast its bound, and writes flow again', async () => {
  const events: string[] = [];
  const hold = new WriteHold(1);
  const { next, started } = held(events);
  const h = hold.handler(next);
  const stuck = h(write(1));
  let ran = false;
  await assert.rejects(hold.quiet(async () => {
    ran = true;
  }), (err: unknown) => {
    assert.ok(err instanceof StoreError);
    assert.equal(err.code, 'ETIMEDOUT');
    assert.equal(err.kind, 'io');
    assert.deepEqual(err.data, { code: 'ETIMEDOUT' }, 'the client is told the code in the error\'s data');
    assert.match(err.message, /1 write\(s\) in flight did not finish within 1 ms; nothing was copied/);
    return true;
  });
  assert.equal(ran, false, 'nothing is fixed while a write is in flight');
  const after = h(write(2));
  assert.deepEqual(events, ['write 1', 'write 2'], 'a write after the failed hold is not held');
  for (const s of started) s.release();
  await Promise.all([stuck, after]);
});

test('quiet with no write in flight runs at once, whatever its bound', async () => {
  const hold = new WriteHold(1);
  assert.equal(await hold.quiet(async () => 'copy'), 'copy');
});

test('quiet waits until every write in flight is answered, not only the first', async () => {
  const events: string[] = [];
  const hold = new WriteHold();
  const { next, started } = held(events);
  const h = hold.handler(next);
  const writes = [h(write(1)), h(write(2))];
  const quiet = hold.quiet(async () => void events.push('fix'));
  started[0]?.release();
  await writes[0];
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(events, ['write 1', 'write 2'], 'write 2 is still in flight');
  started[1]?.release();
  await quiet;
  assert.deepEqual(events, ['write 1', 'write 2', 'fix']);
});

test('two quiets run one after the other, never together', async () => {
  const events: string[] = [];
  const hold = new WriteHold();
  let releaseFirst!: () => void;
  const first = hold.quiet(async () => {
    events.push('first');
    await new Promise<void>((resolve) => (releaseFirst = resolve));
    events.push('first done');
  });
  const second = hold.quiet(async () => void events.push('second'));
  while (!events.includes('first')) await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(events, ['first'], 'the second waits for the first');
  releaseFirst();
  await Promise.all([first, second]);
  assert.deepEqual(events, ['first', 'first done', 'second']);
});
