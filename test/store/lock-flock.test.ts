// The server lock excludes a plain flock(2) holder (checked with util-linux's flock(1) both ways):
// this is what rules out bindings that take fcntl/OFD locks instead (they do not exclude flock
// on Linux). Herrscher's daemon lock `<dir>/.<base>.lock` is the daemon's own: a flock(1) holder
// of it (a daemon's LockState) never keeps the store from opening, and the store neither creates
// nor takes it.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { Store } from '../../src/store/store.js';
import { storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const FLOCK = ['/usr/bin/flock', '/bin/flock'].find((p) => existsSync(p));
const skip = FLOCK ? false : 'flock(1) (util-linux) is not installed';

/** flock -x FILE cat: holds the lock until its stdin closes; resolves once it holds it. */
async function flockHolder(t: TestContext, file: string): Promise<ChildProcessByStdio<Writable, Readable, null>> {
  const holder = spawn(FLOCK as string, ['-x', file, 'sh', '-c', 'echo held; cat'], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => holder.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    holder.stdout.once('data', () => resolve());
    holder.once('exit', (code) => reject(new Error(`flock exited ${code} before holding the lock`)));
  });
  return holder;
}

test('a state dir whose server lock a flock(1) process holds is refused as locked', { skip }, async (t) => {
  const state = statePathIn(tempDir());
  const lockFile = path.join(path.dirname(state), '.herrscher-state', 'server.lock');
  mkdirSync(path.dirname(lockFile), { mode: 0o700 });
  writeFileSync(lockFile, '');
  const holder = await flockHolder(t, lockFile);
  await assert.rejects(() => Store.open(state), storeError('locked', ['another process is already serving']));
  holder.stdin.end();
  await new Promise((r) => holder.once('exit', r));
  const store = await Store.open(state);
  await store.close();
});

test('while the store holds its lock, flock -n on its server lock fails; the daemon lock is neither made nor held', { skip }, async () => {
  const state = statePathIn(tempDir());
  const serverLock = path.join(path.dirname(state), '.herrscher-state', 'server.lock');
  const daemonLock = path.join(path.dirname(state), '.state.json.lock');
  const store = await Store.open(state);
  try {
    assert.equal(existsSync(daemonLock), false, 'the store did not create the daemon lock');
    const probe = spawnSync(FLOCK as string, ['-n', serverLock, 'true']);
    assert.equal(probe.status, 1, 'flock -n could not take the server lock');
    const daemon = spawnSync(FLOCK as string, ['-n', daemonLock, 'true']);
    assert.equal(daemon.status, 0, 'a daemon\'s LockState takes its lock while the store serves');
  } finally {
    await store.close();
  }
  const after = spawnSync(FLOCK as string, ['-n', serverLock, 'true']);
  assert.equal(after.status, 0, 'released at close');
});

test('a daemon holding Herrscher\'s lock (<dir>/.state.json.lock) does not keep the store from opening and writing', { skip }, async (t) => {
  const state = statePathIn(tempDir());
  const daemonLock = path.join(path.dirname(state), '.state.json.lock');
  writeFileSync(daemonLock, '');
  await flockHolder(t, daemonLock);
  const store = await Store.open(state);
  try {
    assert.deepEqual(await store.setInstanceID('beside-the-daemon'), { changed: true });
  } finally {
    await store.close();
  }
});
