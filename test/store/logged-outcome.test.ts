// What a write-ahead batch sent with its lines as one group answers: a line's failure is its
// entry's answer only when its record was left out by the guard; a record that failed, or whose
// fate is unknown (the writer thread lost with the batch), fails the whole batch, so the log is
// cut back and no record of a refused append comes back at replay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loggedOutcome } from '../../src/store/logged-outcome.js';
import { GuardFailed, LineNotWritten } from '../../src/store/writer-thread-jobs.js';

const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
// Two entries with lines (writes 0 and 1), their records (2 and 3), the log's sync (4).
const lineAt = [0, 1];
const recordAt = [2, 3];

test('all written: no failure', () => {
  assert.deepEqual(loggedOutcome([undefined, undefined, undefined, undefined, undefined], lineAt, recordAt, 4), [undefined, undefined]);
});

test('a line that failed and whose record was left out is that entry\'s answer; the other entry stands', () => {
  const out = loggedOutcome([undefined, enospc, undefined, new GuardFailed('left out'), undefined], lineAt, recordAt, 4);
  assert.equal(out[0], undefined);
  assert.ok(out[1] instanceof LineNotWritten);
  assert.equal(out[1].cause, enospc);
});

test('a worker lost with the batch (every write failed, no guard seen) fails the whole batch: its records may be in the log', () => {
  const lost = new Error('the writer thread exited (code 1) with writes unanswered');
  assert.throws(() => loggedOutcome([lost, lost, lost, lost, lost], lineAt, recordAt, 4), (e) => e === lost);
});

test('a record that failed fails the batch, whatever its line did', () => {
  assert.throws(() => loggedOutcome([undefined, undefined, undefined, enospc, undefined], lineAt, recordAt, 4), (e) => e === enospc);
});

test('the sync failing fails the batch when a record went in, and not when every record was left out', () => {
  const eio = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
  assert.throws(() => loggedOutcome([undefined, enospc, undefined, new GuardFailed('left out'), eio], lineAt, recordAt, 4), (e) => e === eio);
  const out = loggedOutcome([enospc, enospc, new GuardFailed('left out'), new GuardFailed('left out'), eio], lineAt, recordAt, 4);
  assert.ok(out.every((e) => e instanceof LineNotWritten));
});

test('a record without a line (bytes written before) is never answered as a line\'s failure', () => {
  // One entry with no line: its record (0) and the sync (1).
  assert.deepEqual(loggedOutcome([undefined, undefined], [undefined], [0], 1), [undefined]);
  assert.throws(() => loggedOutcome([new GuardFailed('left out'), undefined], [undefined], [0], 1), GuardFailed);
});
