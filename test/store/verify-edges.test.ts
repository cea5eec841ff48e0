// backup, verify and restore at their edges: what a start refuses, verify names; a folder that is
// no state dir, or a backup whose writer stopped, does not pass as a state dir; a restore never
// writes into its backup; a start removes what a killed backup left in the side folder.
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, watch, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { backupStore } from '../../src/store/backup.js';
import { STAGING_PREFIX } from '../../src/store/backup-fix.js';
import { MANIFEST_NAME, UNFINISHED_NAME } from '../../src/store/backup-manifest.js';
import { RestoreRefused, restoreBackup } from '../../src/store/restore.js';
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

test('a backup whose writer stopped before its manifest is named unfinished by verify, and refused by restore', async () => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir), { durability: 'write' });
  await store.addSession(newSession('a'));
  await store.appendTranscript('a', { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' });
  const dest = path.join(tempDir(), 'bk');
  await backupStore(store, dest);
  await store.close();
  // What a kill -9 between the last file and the manifest leaves: every file, the marker, no manifest.
  renameSync(path.join(dest, MANIFEST_NAME), path.join(dest, UNFINISHED_NAME));
  const got = (await verifyStateDir(dest)).problems.map(formatProblem);
  assert.deepEqual(got, ['backup-manifest.json: missing: an unfinished backup (its writer stopped before the manifest); take a new one']);
  await assert.rejects(restoreBackup(dest, statePathIn(path.join(tempDir(), 'r'))), RestoreRefused);
});

test('a backup marks its folder unfinished before it writes anything else into it', async () => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir), { durability: 'write' });
  await store.addSession(newSession('a'));
  await store.appendTranscript('a', { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' });
  const dest = tempDir(); // an empty folder: allowed, and watched from before the backup
  const names: string[] = [];
  let done!: () => void;
  const manifestSeen = new Promise<void>((resolve) => (done = resolve));
  const watcher = watch(dest, (_event, name) => {
    if (name !== null && !names.includes(name)) names.push(name);
    if (name === MANIFEST_NAME) done();
  });
  try {
    await backupStore(store, dest);
    await manifestSeen;
  } finally {
    watcher.close();
    await store.close();
  }
  assert.equal(names[0], UNFINISHED_NAME, `the first name in the folder: ${names.join(', ')}`);
  assert.equal(existsSync(path.join(dest, UNFINISHED_NAME)), false, 'renamed to the manifest at the end');
});

test('restore refuses a target inside the backup, which it would change (its files would be extra files of the backup)', async () => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir), { durability: 'write' });
  await store.addSession(newSession('a'));
  const dest = path.join(tempDir(), 'bk');
  await backupStore(store, dest);
  await store.close();
  const before = readdirSync(dest, { recursive: true }).sort();
  await assert.rejects(restoreBackup(dest, path.join(dest, 'restored', 'state.json')), (err: unknown) => err instanceof RestoreRefused && /is inside the backup/.test(err.message));
  assert.deepEqual(readdirSync(dest, { recursive: true }).sort(), before, 'the backup is as it was');
  assert.deepEqual((await verifyStateDir(dest)).problems, []);
});

test('a start removes the staging folder a backup killed mid-way left (its hard links pin the disk space of every file it fixed)', async () => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir), { durability: 'write' });
  await store.addSession(newSession('a'));
  await store.appendTranscript('a', { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' });
  await store.close();
  // What fixBackup leaves when the process dies before writeBackup's end: hard links in the side folder.
  const staging = path.join(dir, '.herrscher-state', `${STAGING_PREFIX}killed`);
  mkdirSync(staging);
  linkSync(path.join(dir, 'transcripts/a.jsonl'), path.join(staging, '0'));
  const reopened = await Store.open(statePathIn(dir), { durability: 'write' });
  await reopened.close();
  assert.equal(existsSync(staging), false);
  assert.equal(statSync(path.join(dir, 'transcripts/a.jsonl')).nlink, 1, 'the transcript has no other link left');
});

test('a restore that fails leaves no folder it made: neither the target\'s parents nor its temp folder', async () => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir), { durability: 'write' });
  await store.addSession(newSession('a'));
  await store.appendTranscript('a', { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' });
  const dest = path.join(tempDir(), 'bk');
  await backupStore(store, dest);
  await store.close();
  const root = tempDir();
  // Names the file system refuses (ENAMETOOLONG, its 255-byte limit) once the parents are made:
  // the folder written beside a target whose name is 230 bytes long; the side folder of a state
  // file whose name is 254 bytes long (`<name>.d`), after the state file and the transcripts are copied.
  const failing: [string, string][] = [
    ['the temp folder cannot be made', path.join(root, 'p1', 'p2', 'd'.repeat(230), 'state.json')],
    ['a side file cannot be written, after the files were copied', path.join(root, 'q1', 'q2', 'target', 's'.repeat(254))],
  ];
  for (const [what, statePath] of failing) {
    await assert.rejects(restoreBackup(dest, statePath), (err: unknown) => err instanceof StoreError && /ENAMETOOLONG|too long/i.test(err.message), what);
    assert.deepEqual(readdirSync(root), [], `${what}: nothing is left where the restore was to go`);
  }
});

test('a manifest of version 1 (no "offline", always a revision) is still read: verified and restored', async () => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir), { durability: 'write' });
  await store.addSession(newSession('a'));
  const dest = path.join(tempDir(), 'bk');
  const taken = await backupStore(store, dest);
  await store.close();
  const file = path.join(dest, MANIFEST_NAME);
  const { offline, ...v2 } = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const v1 = { ...v2, version: 1 };
  assert.equal(offline, false);
  writeFileSync(file, JSON.stringify(v1));
  const report = await verifyStateDir(dest);
  assert.deepEqual(report.problems, []);
  assert.deepEqual({ offline: report.manifest?.offline, revision: report.manifest?.revision }, { offline: false, revision: taken.revision });
  const restored = await restoreBackup(dest, statePathIn(path.join(tempDir(), 'restored')));
  assert.equal(restored.revision, taken.revision);
  // Version 2 says which kind it is, and an offline one names no revision.
  writeFileSync(file, JSON.stringify({ ...v1, version: 2 }));
  assert.deepEqual((await verifyStateDir(dest)).problems.map(formatProblem), ['backup-manifest.json: "offline" is missing or not true or false']);
  writeFileSync(file, JSON.stringify({ ...v1, version: 2, offline: true }));
  assert.match((await verifyStateDir(dest)).problems.map(formatProblem).join('\n'), /^backup-manifest\.json: an offline backup has no revision and epoch/);
});
