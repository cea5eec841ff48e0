// One writer per state file's side files: two state files in one folder (a.json, b.json) never
// share a write-ahead log, a high-water mark or a meta; a dir an older version served keeps every
// acknowledged append when it moves to the per-state-file layout.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { sideOf } from '../../src/store/paths.js';
import { Store } from '../../src/store/store.js';
import { WAL_REL } from '../../src/store/wal-record.js';
import { newSession } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const entry = (i: number) => ({ ts: `t${i}`, role: 'user', text: `entry ${i}` });

test('state.json keeps the side folder every existing dir has; another state file gets one of its own', () => {
  assert.equal(sideOf('state.json'), '.herrscher-state');
  assert.equal(sideOf('a.json'), '.herrscher-state/a.json.d');
  assert.notEqual(sideOf('transcripts'), '.herrscher-state/transcripts', 'never the folder of state.json\'s metas');
});

test('a.json and b.json in one folder: A\'s clean stop leaves B\'s log alone, and B gets its 20 appends back after a power loss', async () => {
  const dir = tempDir();
  const a = await Store.open(path.join(dir, 'a.json'));
  const b = await Store.open(path.join(dir, 'b.json'), { lock: false }); // never closed: "power loss"
  await a.addSession(newSession('sa'));
  await b.addSession(newSession('sb'));
  for (let i = 0; i < 20; i++) {
    await a.appendTranscript('sa', entry(i));
    await b.appendTranscript('sb', entry(i));
  }
  const walA = path.join(dir, sideOf('a.json'), 'wal.log');
  const walB = path.join(dir, sideOf('b.json'), 'wal.log');
  assert.ok(statSync(walB).size > 0, 'B\'s appends are in B\'s own log');
  const sizeA = statSync(walA).size;
  const sizeB = statSync(walB).size;
  assert.ok(sizeA > 0, 'A\'s appends are in A\'s own log');
  await a.close();
  assert.equal(statSync(walA).size, sizeA, 'A\'s clean stop left A\'s log for its next start (it writes nothing)');
  assert.equal(statSync(walB).size, sizeB, 'and left B\'s as it was');
  assert.equal(existsSync(path.join(dir, WAL_REL)), false, 'nobody wrote state.json\'s log');
  // The power loss took B's unsynced appends (a file's first is fdatasynced in the file itself).
  truncateSync(path.join(dir, 'transcripts/sb.jsonl'), readFileSync(path.join(dir, 'transcripts/sb.jsonl'), 'utf8').indexOf('\n') + 1);
  const b2 = await Store.open(path.join(dir, 'b.json'));
  const back = await b2.readTranscript('sb');
  assert.deepEqual(back.map((e) => e.ts), Array.from({ length: 20 }, (_, i) => `t${i}`));
  assert.equal(await b2.appendTranscript('sb', entry(20)), 20, 'seq goes on');
  await b2.close();
});

test('a state file an older version served with the shared side files gets its logged appends, marks and metas back', async () => {
  const dir = tempDir();
  // The old layout: every state file's side files under .herrscher-state/, as state.json's are.
  const old = await Store.open(path.join(dir, 'state.json'), { lock: false }); // crashed: never closed
  await old.addSession(newSession('s'));
  for (let i = 0; i < 5; i++) await old.appendTranscript('s', entry(i));
  renameSync(path.join(dir, 'state.json'), path.join(dir, 'b.json')); // it was b.json's all along
  const firstLine = readFileSync(path.join(dir, 'transcripts/s.jsonl'), 'utf8').indexOf('\n') + 1;
  truncateSync(path.join(dir, 'transcripts/s.jsonl'), firstLine); // a file's first append is fdatasynced in the file itself
  const sharedMeta = path.join(dir, '.herrscher-state/transcripts/other.json');
  mkdirSync(path.dirname(sharedMeta), { recursive: true });
  writeFileSync(sharedMeta, '00000000 {}\n');
  const sharedLog = readFileSync(path.join(dir, WAL_REL));
  const b = await Store.open(path.join(dir, 'b.json'));
  assert.deepEqual((await b.readTranscript('s')).map((e) => e.ts), ['t0', 't1', 't2', 't3', 't4']);
  assert.equal(await b.appendTranscript('s', entry(5)), 5);
  await b.close();
  assert.deepEqual(readFileSync(path.join(dir, sideOf('b.json'), 'transcripts/other.json'), 'utf8'), '00000000 {}\n', 'the shared meta was copied');
  assert.deepEqual(readFileSync(path.join(dir, WAL_REL)), sharedLog, 'state.json\'s log is left for state.json');
  // The take-over happens once: a second start does not replay the shared log again.
  truncateSync(path.join(dir, 'transcripts/s.jsonl'), firstLine);
  const again = await Store.open(path.join(dir, 'b.json'));
  assert.equal((await again.readTranscript('s')).length, 1);
  await again.close();
});
