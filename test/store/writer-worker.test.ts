// The writer thread's worker module on its own: a batch's jobs are written whole and in order
// from the shared bytes, and a failed job answers its own error while the others are written.
import assert from 'node:assert/strict';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { writeBatch } from '../../src/store/writer-worker.js';
import { tempDir } from '../helpers/temp-dir.js';

/** The shared regions writer-thread.ts fills: the jobs' bytes back to back, then fd and length per job. */
function batch(jobs: { fd: number; text: string }[]): { bytes: Buffer; plan: Int32Array } {
  const bytes = Buffer.from(jobs.map((j) => j.text).join(''));
  const plan = new Int32Array(jobs.flatMap((j) => [j.fd, Buffer.byteLength(j.text)]));
  return { bytes, plan };
}

test('a batch writes each job whole to its fd, in order', () => {
  const dir = tempDir();
  const a = openSync(path.join(dir, 'a'), 'a');
  const b = openSync(path.join(dir, 'b'), 'a');
  try {
    const { bytes, plan } = batch([{ fd: a, text: 'one\n' }, { fd: b, text: 'x\n' }, { fd: a, text: 'two\n' }]);
    assert.equal(writeBatch(bytes, plan, 3), null);
  } finally {
    closeSync(a);
    closeSync(b);
  }
  assert.equal(readFileSync(path.join(dir, 'a'), 'utf8'), 'one\ntwo\n');
  assert.equal(readFileSync(path.join(dir, 'b'), 'utf8'), 'x\n');
});

test('a batch writes only its first `jobs` jobs: what a larger earlier batch left in the shared plan is not written again', () => {
  const dir = tempDir();
  const a = openSync(path.join(dir, 'a'), 'a');
  const b = openSync(path.join(dir, 'b'), 'a');
  try {
    const { bytes, plan } = batch([{ fd: a, text: 'one\n' }, { fd: b, text: 'stale\n' }]);
    assert.equal(writeBatch(bytes, plan, 1), null);
  } finally {
    closeSync(a);
    closeSync(b);
  }
  assert.equal(readFileSync(path.join(dir, 'a'), 'utf8'), 'one\n');
  assert.equal(readFileSync(path.join(dir, 'b'), 'utf8'), '');
});

test('a failed job answers its errno and syscall; the jobs around it are written', () => {
  const dir = tempDir();
  const ok = openSync(path.join(dir, 'ok'), 'a');
  const readOnly = openSync(path.join(dir, 'ok'), 'r');
  try {
    const { bytes, plan } = batch([{ fd: ok, text: 'a\n' }, { fd: readOnly, text: 'lost\n' }, { fd: ok, text: 'b\n' }]);
    const answer = writeBatch(bytes, plan, 3);
    assert.equal(answer?.[0], null);
    assert.equal(answer?.[1]?.code, 'EBADF');
    assert.equal(answer?.[1]?.syscall, 'write');
    assert.equal(answer?.[2], null);
  } finally {
    closeSync(ok);
    closeSync(readOnly);
  }
  assert.equal(readFileSync(path.join(dir, 'ok'), 'utf8'), 'a\nb\n');
});
