// Hostile neighbours: a state dir that another user can write to (or that belongs to another
// user) is refused at open, with a message naming the dir and the command that fixes it, so
// nobody else can plant a link there for this server to write through. `serve` exits 1 on it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { openIn, storeError } from '../helpers/store.js';
import { CLI } from '../helpers/cli.js';
import { runToEnd } from '../helpers/cli.js';
import { statePathIn, tempDir, tempDirOthersCanReach } from '../helpers/temp-dir.js';

const isRoot = process.geteuid?.() === 0;
const rootReason = 'needs root (to act as nobody with setpriv)';
if (!isRoot) process.stdout.write(`# store-state-dir-mode: root-only cases skipped: ${rootReason}\n`);

for (const mode of [0o770, 0o707, 0o777, 0o1777]) {
  test(`a state dir of mode ${mode.toString(8)} is refused at open, naming the dir and "chmod go-w"`, async () => {
    const dir = path.join(tempDir(), 'state');
    mkdirSync(dir);
    chmodSync(dir, mode);
    await assert.rejects(() => openIn(dir), storeError('io', [`the state dir ${dir} is writable by`, `chmod go-w '${dir}'`], 'EPERM'));
    assert.deepEqual(readdirSync(dir), [], 'nothing was created in it');
  });
}

test('a state dir of mode 0755 or 0700 opens', async () => {
  for (const mode of [0o755, 0o700]) {
    const dir = path.join(tempDir(), 'state');
    mkdirSync(dir);
    chmodSync(dir, mode);
    const store = await openIn(dir);
    await store.close();
  }
});

test('serve on a group-writable state dir exits 1 with the dir and the fix on stderr', { skip: !existsSync(CLI) && 'the CLI is not built (npm run build)' }, async () => {
  const dir = path.join(tempDir(), 'state');
  mkdirSync(dir);
  chmodSync(dir, 0o775);
  const run = await runToEnd(['serve', '--stdio', '--state', statePathIn(dir)]);
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stderr, /is writable by its group/);
  assert.ok(run.stderr.includes(`chmod go-w '${dir}'`), run.stderr);
});

test('as root: a link planted by nobody in a 0777 state dir is never followed; open refuses and the root-owned target keeps its bytes', { skip: !isRoot && rootReason }, async () => {
  const root = tempDirOthersCanReach();
  const dir = path.join(root, 'state');
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  const target = path.join(root, 'root-owned');
  writeFileSync(target, 'precious\n', { mode: 0o600 });
  execFileSync('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', 'ln', '-s', target, path.join(dir, '.herrscher-state')]);
  await assert.rejects(() => openIn(dir), storeError('io', ['is writable by its group and others', 'chmod go-w'], 'EPERM'));
  assert.equal(readFileSync(target, 'utf8'), 'precious\n');
});

test('as root: a state dir owned by nobody is refused, naming the owner and the fix', { skip: !isRoot && rootReason }, async () => {
  const root = tempDir();
  const dir = path.join(root, 'state');
  mkdirSync(dir, { mode: 0o700 });
  chownSync(dir, Number(execFileSync('id', ['-u', 'nobody']).toString().trim()), 0);
  await assert.rejects(() => openIn(dir), storeError('io', [`the state dir ${dir} belongs to uid`, 'chown'], 'EPERM'));
});
