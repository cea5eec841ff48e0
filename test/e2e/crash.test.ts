// The short form of the crash test (npm run crash-test runs 200+ kills): SIGKILL the server at
// random moments under load, restart it, and check the files after every kill. Four kills: each
// round's load sends all three write kinds (transcript appends, participants appends, resume-token
// setters) to every session until its kill, so each kill lands among writes of every kind and each
// kind is checked after every kill; the asserts below check each kind was acknowledged.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCrashTest } from '../helpers/crash-runner.js';
import { tempDir } from '../helpers/temp-dir.js';

test('every acknowledged write survives SIGKILL of the server, nothing torn, nothing invented', { timeout: 120_000 }, async (t) => {
  // t.signal aborts when the test times out: the runner then kills its server (none outlives it).
  const report = await runCrashTest({ dir: tempDir('hs-crash-'), kills: 4, seed: 7, signal: t.signal });
  assert.deepEqual(report.problems, []);
  assert.ok(report.ackedAppends > 0, 'the load generator got appends acknowledged');
  assert.ok(report.ackedParticipants > 0, 'and participants');
  assert.ok(report.ackedMutations > 0, 'and resume tokens');
});
