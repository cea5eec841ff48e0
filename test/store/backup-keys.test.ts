// The idempotency keys go through a backup and a restore: a write answered before the backup and
// sent again with its key to the restored state is answered as it was, not applied twice; verify
// names key files the server would skip (their keys lost, so a retry would land twice).
import assert from 'node:assert/strict';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { backupOffline, backupStore } from '../../src/store/backup.js';
import { KEY_FILES, MANIFEST_NAME } from '../../src/store/backup-manifest.js';
import { hashFile } from '../../src/store/file-copy.js';
import { restoreBackup } from '../../src/store/restore.js';
import { sealLine } from '../../src/store/sealed-line.js';
import { Store } from '../../src/store/store.js';
import { formatProblem, verifyStateDir } from '../../src/store/verify.js';
import { newSession, storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const entry = (text: string) => ({ ts: '2026-01-01T00:00:00Z', role: 'user', text });
const docKey = (seq: number) => ({ id: 'doc-writer', seq });
const appendKey = (seq: number) => ({ id: 'append-writer', seq });

/** A store with a keyed add, a keyed setter and a keyed append answered, and a write without a key. */
async function keyed(dir: string): Promise<{ store: Store; added: unknown }> {
  const store = await Store.open(statePathIn(dir), { durability: 'write' });
  const added = await store.addSession(newSession('a'), docKey(1));
  assert.deepEqual(await store.setResumeToken('a', 'tok', { writer: docKey(2) }), { found: true, changed: true });
  assert.equal(await store.appendTranscript('a', entry('once'), { writer: appendKey(1) }), 0);
  await store.addSession(newSession('b'));
  return { store, added };
}

/** Sends the keyed writes of keyed() again to the state at `statePath`: each is answered as it was, none applied again. */
async function retriesAnsweredAsBefore(statePath: string, added: unknown): Promise<void> {
  const store = await Store.open(statePath, { durability: 'write' });
  try {
    assert.deepEqual(await store.addSession(newSession('a'), docKey(1)), added, 'the add sent again is answered with its row, not refused as existing');
    await store.setResumeToken('a', 'other');
    assert.deepEqual(await store.setResumeToken('a', 'tok', { writer: docKey(2) }), { found: true, changed: true }, 'the setter sent again is answered as it was');
    assert.equal(store.getState().sessions?.find((s) => s.name === 'a')?.resumeToken, 'other', 'and not applied again');
    assert.equal(await store.appendTranscript('a', entry('once'), { writer: appendKey(1) }), 0, 'the append sent again is answered with its seq');
    assert.deepEqual((await store.readTranscript('a', 0)).map((e) => e.text), ['once'], 'and not written again');
    // Keys the backup never saw are applied as any write.
    assert.equal(await store.appendTranscript('a', entry('next'), { writer: appendKey(2) }), 1);
    await assert.rejects(() => store.addSession(newSession('b'), docKey(3)), storeError('exists'));
  } finally {
    await store.close();
  }
}

test('a keyed write answered before a backup and sent again to the restored state is answered as it was, not applied twice', async () => {
  const dir = tempDir();
  const { store, added } = await keyed(dir);
  const dest = path.join(tempDir(), 'bk');
  await backupStore(store, dest);
  await store.close();
  const report = await verifyStateDir(dest);
  assert.deepEqual(report.problems, []);
  assert.deepEqual(Object.keys(report.manifest?.files ?? {}).filter((f) => f.startsWith('.herrscher-state/')).sort(), [KEY_FILES.appendKeys, KEY_FILES.stateKeys]);
  assert.doesNotMatch(readFileSync(path.join(dest, KEY_FILES.appendKeys), 'utf8'), /"p":/, 'no line names an inode or an offset');
  assert.doesNotMatch(readFileSync(path.join(dest, KEY_FILES.stateKeys), 'utf8'), /"b":/, 'no line names a stamp of state.json');
  // The default state file's side folder, and another's (`<base>.d`): the keys go to the target's.
  for (const base of ['state.json', 'other.json']) {
    const target = path.join(tempDir(), 'restored', base);
    await restoreBackup(dest, target);
    await retriesAnsweredAsBefore(target, added);
    assert.deepEqual((await verifyStateDir(path.dirname(target), base)).problems, []);
  }
});

test('a backup of an earlier build (the document\'s keys in writers.json) restores with its keys answered', async () => {
  const dir = tempDir();
  const { store, added } = await keyed(dir);
  const dest = path.join(tempDir(), 'bk');
  await backupStore(store, dest);
  await store.close();
  // What an earlier build wrote in the backup for the same keys: the table, nothing under way.
  const keys = readFileSync(path.join(dest, KEY_FILES.stateKeys), 'utf8').split('\n').filter((l) => l !== '')
    .map((l) => JSON.parse(l.slice(9)) as { w: string; q: number; a: unknown });
  const table = [...new Set(keys.map((k) => k.w))].map((w) => [w, keys.filter((k) => k.w === w).map((k) => [k.q, k.a])]);
  writeFileSync(path.join(dest, KEY_FILES.writers), JSON.stringify({ v: 1, before: null, table, last: [] }));
  rmSync(path.join(dest, KEY_FILES.stateKeys));
  const manifest = JSON.parse(readFileSync(path.join(dest, MANIFEST_NAME), 'utf8')) as { files: Record<string, unknown> };
  delete manifest.files[KEY_FILES.stateKeys];
  manifest.files[KEY_FILES.writers] = await hashFile(path.join(dest, KEY_FILES.writers));
  writeFileSync(path.join(dest, MANIFEST_NAME), JSON.stringify(manifest));
  assert.deepEqual((await verifyStateDir(dest)).problems, []);
  const target = statePathIn(path.join(tempDir(), 'restored'));
  await restoreBackup(dest, target);
  await retriesAnsweredAsBefore(target, added);
});

test('a backup taken with no server running carries the keys too', async () => {
  const dir = tempDir();
  const { store, added } = await keyed(dir);
  await store.close();
  const reopened = await Store.open(statePathIn(dir), { durability: 'write' });
  const dest = path.join(tempDir(), 'bk');
  await backupOffline(reopened, dest);
  await reopened.close();
  const target = statePathIn(path.join(tempDir(), 'restored'));
  await restoreBackup(dest, target);
  await retriesAnsweredAsBefore(target, added);
});

test('verify names key files whose keys the server would skip, in a backup and in a live dir', async () => {
  const dir = tempDir();
  const { store } = await keyed(dir);
  const dest = path.join(tempDir(), 'bk');
  await backupStore(store, dest);
  await store.close();
  const problemsOf = async (d: string): Promise<string[]> => (await verifyStateDir(d)).problems.map(formatProblem);

  // A backup whose key files were written wrong, with a manifest that agrees (no checksum problem).
  const copy = path.join(tempDir(), 'copy');
  cpSync(dest, copy, { recursive: true });
  writeFileSync(path.join(copy, KEY_FILES.writers), '{"v":1}');
  writeFileSync(path.join(copy, KEY_FILES.stateKeys), `${readFileSync(path.join(dest, KEY_FILES.stateKeys), 'utf8')}${sealLine('{"q":1}')}`);
  writeFileSync(path.join(copy, KEY_FILES.appendKeys), `${sealLine('{"w":"x"}')}${readFileSync(path.join(dest, KEY_FILES.appendKeys), 'utf8')}`);
  const manifest = JSON.parse(readFileSync(path.join(copy, MANIFEST_NAME), 'utf8')) as { files: Record<string, unknown> };
  for (const rel of Object.values(KEY_FILES)) manifest.files[rel] = await hashFile(path.join(copy, rel));
  writeFileSync(path.join(copy, MANIFEST_NAME), JSON.stringify(manifest));
  const got = await problemsOf(copy);
  assert.equal(got.length, 3, got.join('\n'));
  assert.match(got[0] as string, /^\.herrscher-state\/writers\.json: not a table of writers .*applied again/);
  assert.match(got[1] as string, /^\.herrscher-state\/state-keys\.log:3: not a key .*applied again/);
  assert.match(got[2] as string, /^\.herrscher-state\/append-keys\.log:1: not a key .*written again/);

  // The live dir: a damaged line in the middle is named, a torn last line (a crash's) is not.
  const log = path.join(dir, '.herrscher-state', 'append-keys.log');
  const lines = readFileSync(log, 'utf8');
  writeFileSync(log, `garbage\n${lines}{"w":"torn`);
  writeFileSync(path.join(dir, '.herrscher-state', 'writers.json'), 'not json');
  const live = await problemsOf(dir);
  assert.deepEqual(live.map((p) => p.replace(/:.*/s, '')), ['.herrscher-state/writers.json', '.herrscher-state/append-keys.log'], live.join('\n'));
  assert.match(live[1] as string, /^\.herrscher-state\/append-keys\.log:1: /);
});
