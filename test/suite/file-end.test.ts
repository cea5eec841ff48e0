// The cleanups a test file leaves for its end (test/helpers/file-end.ts): in a shard process they
// must run after each file, not once after the first, or every later file's temp dirs and stray
// servers outlive it.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { atFileEnd, runFileEnd } from '../helpers/file-end.js';
import { privateRuntimeDir } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

test('runFileEnd runs what was registered, newest first, and only once', () => {
  runFileEnd(); // what earlier tests of this file left: not this test's subject
  const ran: string[] = [];
  atFileEnd(() => ran.push('first'));
  atFileEnd(() => ran.push('second'));
  runFileEnd();
  assert.deepEqual(ran, ['second', 'first']);
  runFileEnd();
  assert.deepEqual(ran, ['second', 'first'], 'a second end runs nothing again');
});

test('one failing cleanup does not skip the others, and its error is thrown', () => {
  runFileEnd();
  const ran: string[] = [];
  atFileEnd(() => ran.push('kept'));
  atFileEnd(() => {
    throw new Error('boom');
  });
  assert.throws(() => runFileEnd(), /boom/);
  assert.deepEqual(ran, ['kept']);
  atFileEnd(() => {
    throw new Error('one');
  });
  atFileEnd(() => {
    throw new Error('two');
  });
  assert.throws(() => runFileEnd(), (err: unknown) => err instanceof AggregateError && err.errors.length === 2);
});

test('each file end removes the temp dirs made since the last, and the next file gets its own runtime dir', () => {
  runFileEnd();
  const first = tempDir();
  const runtime = privateRuntimeDir();
  assert.equal(privateRuntimeDir(), runtime, 'one runtime dir per file');
  runFileEnd(); // the end of one file in a shard process
  assert.equal(existsSync(first), false);
  assert.equal(existsSync(runtime), false);
  const second = tempDir();
  const nextRuntime = privateRuntimeDir();
  assert.notEqual(nextRuntime, runtime, 'the next file must not reuse a removed runtime dir');
  assert.equal(existsSync(nextRuntime), true);
  runFileEnd();
  assert.equal(existsSync(second), false);
  assert.equal(existsSync(nextRuntime), false);
});
