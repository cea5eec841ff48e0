// The lock excludes a plain flock(2) holder, as Herrscher's Go daemon is one (syscall.Flock on
// the same file): checked with util-linux's flock(1) both ways. This is what rules out bindings
// that take fcntl/OFD locks instead (they do not exclude flock on Linux).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Store } from '../../src/store/store.js';
import { storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const FLOCK = ['/usr/bin/flock', '/bin/flock'].find((p) => existsSync(p));
const skip = FLOCK ? false : 'flock(1) (util-linux) is not installed';

test('a state dir whose lock file a flock(1) process holds is refused as locked', { skip }, async (t) => {
  const state = statePathIn(tempDir());
  const lockFile = path.join(path.dirname(state), '.state.json.lock');
  writeFileSync(lockFile, '');
  // flock -x FILE cat: holds the lock until its stdin closes.
  const holder = spawn(FLOCK as string, ['-x', lockFile, 'sh', '-c', 'echo held; cat'], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => holder.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    holder.stdout.once('data', () => resolve());
    holder.once('exit', (code) => reject(new Error(`flock exited ${code} before holding the lock`)));
  });
  await assert.rejects(() => Store.open(state), storeError('locked', ['another process is already serving']));
  holder.stdin.end();
  await new Promise((r) => holder.once('exit', r));
  const store = await Store.open(state);
  await store.close();
});

test('while the store holds its lock, flock -n on the same file fails', { skip }, async () => {
  const state = statePathIn(tempDir());
  const store = await Store.open(state);
  try {
    const probe = spawnSync(FLOCK as string, ['-n', path.join(path.dirname(state), '.state.json.lock'), 'true']);
    assert.equal(probe.status, 1, 'flock -n could not take the lock');
  } finally {
    await store.close();
  }
  const after = spawnSync(FLOCK as string, ['-n', path.join(path.dirname(state), '.state.json.lock'), 'true']);
  assert.equal(after.status, 0, 'released at close');
});
