// A damaged record in the middle of the write-ahead log (a bad sector, a forged line) costs that
// record only: it is skipped and logged at error (so `status` reports it), every valid record
// around it is replayed, and the seq numbers keep going up after the restart.
import assert from 'node:assert/strict';
import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { StorageHealth } from '../../src/store/health.js';
import { Store } from '../../src/store/store.js';
import { WAL_REL } from '../../src/store/wal-record.js';
import { newSession } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { sealLine } from '../../src/store/sealed-line.js';

const entry = (i: number) => ({ ts: `t${i}`, role: 'user', text: `entry ${i}` });
const line = (i: number) => `${JSON.stringify(entry(i))}\n`;

/** 20 acknowledged appends, then a "crash" (no close): the log keeps every record. */
async function crashedWith20(dir: string): Promise<{ ino: number }> {
  const s = await Store.open(statePathIn(dir), { lock: false });
  await s.addSession(newSession('s'));
  for (let i = 0; i < 20; i++) assert.equal(await s.appendTranscript('s', entry(i)), i);
  const rec = JSON.parse(readFileSync(path.join(dir, WAL_REL), 'utf8').split('\n')[0]!.slice(9)) as { i: number };
  return { ino: rec.i };
}

async function reopen(dir: string): Promise<{ store: Store; errors: string[]; health: StorageHealth }> {
  const errors: string[] = [];
  const health = new StorageHealth();
  const store = await Store.open(statePathIn(dir), { error: (m) => errors.push(m), health });
  return { store, errors, health };
}

/** Rewrites the log with line `n` (0-based) replaced by `bad` (a complete line). */
function replaceLine(dir: string, n: number, bad: (orig: string) => string): void {
  const file = path.join(dir, WAL_REL);
  const lines = readFileSync(file, 'utf8').split('\n');
  lines[n] = bad(lines[n]!);
  writeFileSync(file, lines.join('\n'));
}

test('a damaged record in the middle of the log is skipped with an error; the 18 valid records after it are replayed; seq goes on', async (t) => {
  const dir = tempDir();
  await crashedWith20(dir);
  const file = path.join(dir, 'transcripts/s.jsonl');
  truncateSync(file, line(0).length); // the power loss kept only the first append in the file
  replaceLine(dir, 1, (orig) => orig.replace('entry 1', 'entrx 1')); // the checksum no longer fits
  const { store, errors, health } = await reopen(dir);
  t.after(() => store.close());
  const kept = readFileSync(file, 'utf8');
  for (let i = 2; i < 20; i++) assert.ok(kept.includes(line(i)), `acknowledged append ${i} replayed`);
  const damaged = errors.filter((e) => e.includes('damaged record'));
  assert.equal(damaged.length, 1, errors.join('\n'));
  assert.match(damaged[0]!, /line 2 \(checksum mismatch\)/);
  assert.equal(health.snapshot().healthy, false, 'status reports the damaged record');
  assert.ok(await store.appendTranscript('s', entry(20)) >= 20, 'the next seq does not go back');
});

for (const [what, forge] of [
  ['offset -1', (r: Record<string, unknown>) => ({ ...r, o: -1 })],
  ['offset "3"', (r: Record<string, unknown>) => ({ ...r, o: '3' })],
  ['offset 1.5', (r: Record<string, unknown>) => ({ ...r, o: 1.5 })],
  ['d a number', (r: Record<string, unknown>) => ({ ...r, d: 42 })],
  ['f a number', (r: Record<string, unknown>) => ({ ...r, f: 7 })],
  ['an array', () => [1, 2]],
  ['null', () => null],
] as const) {
  test(`a checksum-valid forged record with ${what} is treated as damaged: no byte appended, the start succeeds`, async (t) => {
    const dir = tempDir();
    await crashedWith20(dir);
    const file = path.join(dir, 'transcripts/s.jsonl');
    const before = readFileSync(file);
    replaceLine(dir, 5, (orig) => sealLine(JSON.stringify(forge(JSON.parse(orig.slice(9)) as Record<string, unknown>))).trimEnd());
    const { store, errors } = await reopen(dir);
    t.after(() => store.close());
    assert.deepEqual(readFileSync(file), before, 'the file is as the 20 appends left it');
    assert.ok(errors.some((e) => /damaged record.*line 6/.test(e)), errors.join('\n'));
    assert.equal((await store.readTranscript('s')).length, 20);
  });
}
