// verify at its edges: what a start refuses, verify names; a folder that is no state dir is not
// passed as one.
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { sealLine } from '../../src/store/sealed-line.js';
import { Store } from '../../src/store/store.js';
import { StoreError } from '../../src/store/store-error.js';
import { formatProblem, verifyStateDir } from '../../src/store/verify.js';
import { newSession } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

test('verify names a write-ahead log line of a newer format, which stops a start', async () => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir), { durability: 'write' });
  await store.addSession(newSession('a'));
  await store.appendTranscript('a', { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' });
  await store.close();
  appendFileSync(path.join(dir, '.herrscher-state/wal.log'), sealLine('{"x":1}', 2));
  await assert.rejects(Store.open(statePathIn(dir)), (err: unknown) => err instanceof StoreError && /format version 2/.test(err.message));
  const got = (await verifyStateDir(dir)).problems.map(formatProblem);
  assert.equal(got.length, 1, got.join('\n'));
  assert.match(got[0] as string, /^\.herrscher-state\/wal\.log:\d+: .*format version 2, newer than this build reads/);
});

test('verify of a folder that holds no state dir (no state.json, no store folder) reports it, not "no problem"', async () => {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'notes.txt'), 'not a state dir');
  const got = (await verifyStateDir(dir)).problems.map(formatProblem);
  assert.equal(got.length, 1, got.join('\n'));
  assert.match(got[0] as string, /^state\.json: missing.*not a state dir/);
  const started = tempDir();
  mkdirSync(path.join(started, '.herrscher-state'));
  assert.deepEqual((await verifyStateDir(started)).problems, [], 'a state dir before its first save has its side folder');
});
