// One writer per state file: flock(2) on the server lock in its side folder
// (<dir>/.herrscher-state/server.lock). A second opener is refused with the holder's pid; a holder
// killed with SIGKILL leaves nothing to clean up by hand. Herrscher's daemon lock
// (<dir>/.state.json.lock) is never created nor taken by the store.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Store } from '../../src/store/store.js';
import { storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const fixture = path.join(root, 'test/fixtures/hold-store.mjs');

/**
 * Starts a Node process that opens the store and holds it; resolves once it says it holds the
 * lock. The child is killed after the test whatever the outcome (also when it never got ready), so
 * a failing test never leaves a process holding the lock and the test process alive.
 */
async function holder(t: TestContext, statePath: string): Promise<ChildProcessWithoutNullStreams> {
  const child = spawn(process.execPath, [fixture, statePath], { cwd: root });
  t.after(() => killed(child));
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve();
    });
    child.once('exit', (code, signal) => reject(new Error(`holder exited (${code ?? signal}) before holding the lock: ${err}`)));
  });
  assert.equal(out, `ready ${child.pid}\n`);
  return child;
}

function killed(child: ChildProcessWithoutNullStreams): Promise<NodeJS.Signals | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.signalCode);
    else child.once('exit', (_code, signal) => resolve(signal));
    child.kill('SIGKILL');
  });
}

test('a second process opening the same state file is refused with kind locked and the holder\'s pid', { timeout: 60_000 }, async (t) => {
  const dir = tempDir();
  const statePath = statePathIn(dir);
  const child = await holder(t, statePath);
  await assert.rejects(() => Store.open(statePath), (err) => {
    storeError('locked', ['another process is already serving', `(pid ${child.pid})`])(err);
    assert.deepEqual((err as { data?: unknown }).data, { pid: child.pid });
    return true;
  });
  assert.equal(readFileSync(path.join(dir, '.herrscher-state', 'server.lock'), 'utf8'), String(child.pid), 'the pid recorded as Go records it');
  assert.equal(existsSync(path.join(dir, '.state.json.lock')), false, 'the daemon lock was never created');
});

test('after the holder is killed with SIGKILL, the next open takes the lock without manual cleanup', { timeout: 60_000 }, async (t) => {
  const dir = tempDir();
  const statePath = statePathIn(dir);
  const child = await holder(t, statePath);
  await assert.rejects(() => Store.open(statePath), storeError('locked', [`(pid ${child.pid})`]));
  assert.equal(await killed(child), 'SIGKILL');
  const store = await Store.open(statePath);
  t.after(() => store.close());
  assert.equal(readFileSync(path.join(dir, '.herrscher-state', 'server.lock'), 'utf8'), String(process.pid));
  assert.deepEqual(await store.setInstanceID('after-crash'), { changed: true });
});

test('a second open in the same process is refused too, naming this process', async (t) => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir));
  t.after(() => store.close());
  await assert.rejects(() => Store.open(statePathIn(dir)), storeError('locked', [`(pid ${process.pid})`]));
});

test('close releases the lock: the state file can be opened again at once', async () => {
  const dir = tempDir();
  const first = await Store.open(statePathIn(dir));
  await first.setInstanceID('one');
  await first.close();
  const second = await Store.open(statePathIn(dir));
  assert.equal(second.getState().instanceID, 'one');
  await second.close();
});

test('the lock file is the state file\'s own server.lock in its side folder, never Go\'s <dir>/.<base>.lock', async (t) => {
  const dir = tempDir();
  const store = await Store.open(path.join(dir, 'custom.json'));
  t.after(() => store.close());
  assert.equal(readFileSync(path.join(dir, '.herrscher-state', 'custom.json.d', 'server.lock'), 'utf8'), String(process.pid));
  assert.equal(existsSync(path.join(dir, '.custom.json.lock')), false, 'the daemon lock was never created');
  await assert.rejects(() => Store.open(path.join(dir, 'custom.json')), storeError('locked'));
  const other = await Store.open(path.join(dir, 'other.json'));
  await other.close();
});
