// A restore that fails leaves the place as it found it and says so (as pg_basebackup's or etcd's
// restore: a failed one is no restore), up to its last step: the sync of the folder above the
// target after the rename. Failures are injected through the Io restoreBackup takes.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { backupStore } from '../../src/store/backup.js';
import { syncFolder } from '../../src/store/file-copy.js';
import type { Io } from '../../src/store/io.js';
import { withIo } from '../../src/store/io.js';
import { restoreBackup } from '../../src/store/restore.js';
import { Store } from '../../src/store/store.js';
import { StoreError } from '../../src/store/store-error.js';
import { verifyStateDir } from '../../src/store/verify.js';
import { errno, newSession } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

/** A backup of a state with one session and one entry. */
async function aBackup(): Promise<string> {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir), { durability: 'write' });
  await store.addSession(newSession('a'));
  await store.appendTranscript('a', { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' });
  const dest = path.join(tempDir(), 'bk');
  await backupStore(store, dest);
  await store.close();
  return dest;
}

/** An Io whose sync of `folder` fails with EIO once the restored folder was renamed into place; `renameBack` fails the rename out of it too. */
function syncFailsAfterRename(folder: string, { renameBack = false } = {}): { io: Io; calls: string[] } {
  const calls: string[] = [];
  let renamed = false;
  const io = withIo({
    rename: async (from, to) => {
      calls.push(`rename ${path.basename(from)} -> ${path.basename(to)}`);
      if (renamed && renameBack) throw errno('EIO', 'rename');
      const { rename } = await import('node:fs/promises');
      await rename(from, to);
      renamed = true;
    },
    syncDir: async (dir) => {
      if (renamed && dir === folder) {
        calls.push('sync failed');
        throw errno('EIO', 'fsync');
      }
      await syncFolder(dir);
    },
  });
  return { io, calls };
}

test('the folder above the target cannot be synced after the rename: the restored folder is moved out and removed, the folders made for it too; the error says nothing was restored', async () => {
  const dest = await aBackup();
  const root = tempDir();
  const target = path.join(root, 'p1', 'p2', 'restored');
  const { io, calls } = syncFailsAfterRename(path.join(root, 'p1', 'p2'));
  await assert.rejects(restoreBackup(dest, statePathIn(target), io), (err: unknown) => err instanceof StoreError && err.code === 'EIO'
    && /restore into .*restored: the folder above it could not be synced after the rename \(.*EIO: i\/o error\); the restored folder was moved out again and removed: nothing was restored$/.test(err.message));
  assert.ok(calls.includes('sync failed'), calls.join('\n'));
  assert.deepEqual(readdirSync(root), [], 'nothing is left where the restore was to go, not even the folders above it');
  // The backup is untouched, and a restore with a disk that syncs succeeds.
  assert.deepEqual((await verifyStateDir(dest)).problems, []);
  await restoreBackup(dest, statePathIn(target));
  assert.deepEqual((await verifyStateDir(target)).problems, []);
});

test('an empty target folder the restore replaced is made again, with its mode, when the sync after the rename fails', async () => {
  const dest = await aBackup();
  const root = tempDir();
  const target = path.join(root, 'restored');
  mkdirSync(target);
  chmodSync(target, 0o750);
  const { io } = syncFailsAfterRename(root);
  await assert.rejects(restoreBackup(dest, statePathIn(target), io), (err: unknown) => err instanceof StoreError && /nothing was restored$/.test(err.message));
  assert.deepEqual(readdirSync(root), ['restored'], 'no temp folder beside it');
  assert.deepEqual(readdirSync(target), [], 'the target is the empty folder it was');
  assert.equal(statSync(target).mode & 0o7777, 0o750);
});

test('an empty target folder that cannot be made again (something took its place meanwhile) is named in the error, with why', async () => {
  const dest = await aBackup();
  const root = tempDir();
  const target = path.join(root, 'restored');
  mkdirSync(target);
  const { io: failing } = syncFailsAfterRename(root);
  // Right after the restored folder is moved out, another process puts a file at its name.
  const io = withIo({
    ...failing,
    rename: async (from, to) => {
      await failing.rename(from, to);
      if (from === target) writeFileSync(target, 'not a folder');
    },
  });
  await assert.rejects(restoreBackup(dest, statePathIn(target), io), (err: unknown) => err instanceof StoreError
    && /nothing was restored; the empty folder it had replaced could not be made again \(mkdir .*restored: EEXIST: .*\)$/.test(err.message));
  assert.equal(readFileSync(target, 'utf8'), 'not a folder', 'what took its place is left alone');
  assert.deepEqual(readdirSync(root), ['restored'], 'no temp folder beside it');
});

test('when the restored folder cannot be moved out either, the error says where it is left and that it must be removed', async () => {
  const dest = await aBackup();
  const root = tempDir();
  const target = path.join(root, 'restored');
  const { io } = syncFailsAfterRename(root, { renameBack: true });
  await assert.rejects(restoreBackup(dest, statePathIn(target), io), (err: unknown) => err instanceof StoreError
    && /could not be synced after the rename .* and it could not be moved out again \(rename .*restored: EIO: i\/o error\): the restored folder is left at .*restored; remove it before restoring again$/.test(err.message));
  assert.deepEqual(readdirSync(root), ['restored'], 'its temp folder is gone (it is the restored folder now)');
  assert.deepEqual((await verifyStateDir(target)).problems, [], 'what is left is the whole restore, not a part of it');
});

test('a folder sync that fails while the files are written leaves nothing either (the rename never ran)', async () => {
  const dest = await aBackup();
  const root = tempDir();
  const target = path.join(root, 'p1', 'restored');
  let renames = 0;
  const io = withIo({
    syncDir: async (dir) => {
      if (path.basename(dir) === 'transcripts') throw errno('EIO', 'fsync');
      await syncFolder(dir);
    },
    rename: async () => void renames++,
  });
  await assert.rejects(restoreBackup(dest, statePathIn(target), io), (err: unknown) => err instanceof StoreError && /^restore into .*restored: EIO/.test(err.message));
  assert.equal(renames, 0);
  assert.equal(existsSync(path.join(root, 'p1')), false);
  assert.deepEqual(readdirSync(root), []);
});
