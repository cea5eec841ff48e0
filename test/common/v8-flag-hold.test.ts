// Holding the V8 flags set at run time at V8's defaults while a Worker loads: the hold's counting
// (in process, with recording flags), and, in a process of its own with serve's real heap flags,
// that the hold is what V8 checks a code cache against (test/fixtures/v8-flag-hold.mjs).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { holdV8FlagDefaults, registerRuntimeV8Flags, v8FlagsHeld } from '../../src/common/v8-flag-hold.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('the first hold puts the flags back to the defaults, the last release sets them again, a release twice counts once', () => {
  const calls: string[] = [];
  registerRuntimeV8Flags({ toDefaults: () => calls.push('defaults'), apply: () => calls.push('apply') });
  try {
    assert.equal(v8FlagsHeld(), false);
    const one = holdV8FlagDefaults();
    const two = holdV8FlagDefaults();
    assert.deepEqual(calls, ['defaults']);
    assert.equal(v8FlagsHeld(), true);
    one();
    one();
    assert.deepEqual(calls, ['defaults'], 'one hold is still taken');
    assert.equal(v8FlagsHeld(), true);
    two();
    assert.deepEqual(calls, ['defaults', 'apply']);
    assert.equal(v8FlagsHeld(), false);
    holdV8FlagDefaults()();
    assert.deepEqual(calls, ['defaults', 'apply', 'defaults', 'apply']);
  } finally {
    registerRuntimeV8Flags(undefined);
  }
});

test('with no flags registered a hold does nothing but count', () => {
  const release = holdV8FlagDefaults();
  assert.equal(v8FlagsHeld(), true);
  release();
  assert.equal(v8FlagsHeld(), false);
});

test('serve\'s heap flags make V8 refuse a code cache made before them; held, it is accepted again; released, refused again', { timeout: 30_000 }, async () => {
  const child = spawn(process.execPath, [path.join(REPO, 'test/fixtures/v8-flag-hold.mjs')], { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] });
  const out: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  assert.equal(code, 0);
  assert.deepEqual(JSON.parse(Buffer.concat(out).toString('utf8')), { before: false, applied: true, held: false, released: true });
});
