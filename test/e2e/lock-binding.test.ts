// A runtime the flock binding cannot load in (an Electron whose ABI has no prebuilt binary, or an
// install without the optional dependency) gets one line saying what to do, exit 1, and nothing
// made on disk; simulated with a preload that makes Node's addon loader fail as on an ABI mismatch.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { CLI } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

test('serve in a runtime whose ABI the binding lacks: a clear line naming the runtime, exit 1, no state dir made', { timeout: 30_000 }, () => {
  const preload = path.join(tempDir(), 'abi-mismatch.cjs');
  writeFileSync(
    preload,
    `Object.defineProperty(process.versions, 'electron', { value: '99.1.0', configurable: true, enumerable: true });\n` +
      `process.dlopen = (module, file) => { const e = new Error('The module ' + JSON.stringify(file) + ' was compiled against a different Node.js version using NODE_MODULE_VERSION 115. This version of Node.js requires NODE_MODULE_VERSION 999.'); e.code = 'ERR_DLOPEN_FAILED'; throw e; };\n`,
  );
  const dir = path.join(tempDir(), 'state');
  const r = spawnSync(process.execPath, ['--require', preload, CLI, 'serve', '--stdio', '--state', path.join(dir, 'state.json')], { input: '', encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 1, r.stderr);
  const line = r.stderr.trim().split('\n').pop() as string;
  assert.match(line, /cannot load the flock\(2\) binding the state lock needs: fs-ext-extra-prebuilt does not load in Electron 99\.1\.0/);
  assert.match(line, /Electron 99\.1\.0 \(Node [0-9.]+, ABI [0-9]+\): \S/, 'the loader\'s own reason follows');
  assert.match(line, /run the server with Node 20 or later \(from Electron: a node on PATH, or spawn\(\{ node \}\)\)/);
  assert.equal(existsSync(dir), false, 'nothing was made on disk');
});
