// The writer thread's worker module on its own: a batch's jobs are written whole and in order
// from the shared bytes, and a failed job answers its own error while the others are written.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { PLAN_DATASYNC } from '../../src/store/writer-worker-control.js';
import { writeBatch } from '../../src/store/writer-worker.js';
import { tempDir } from '../helpers/temp-dir.js';

/** The shared regions writer-thread.ts fills: the jobs' bytes back to back, then fd, length and flags per job. */
function batch(jobs: { fd: number; text: string; sync?: boolean }[]): { bytes: Buffer; plan: Int32Array } {
  const bytes = Buffer.from(jobs.map((j) => j.text).join(''));
  const plan = new Int32Array(jobs.flatMap((j) => [j.fd, Buffer.byteLength(j.text), j.sync ? PLAN_DATASYNC : 0]));
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

test('a job flagged to be synced is fdatasynced after its write, and a failed sync is its own error', () => {
  const dir = tempDir();
  const file = openSync(path.join(dir, 'file'), 'a');
  // fdatasync of a FIFO fails (EINVAL) once its write went through: the answer tells the sync was made.
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const pipe = openSync(fifo, 'r+');
  try {
    const { bytes, plan } = batch([
      { fd: file, text: 'kept\n', sync: true },
      { fd: pipe, text: 'unsynced\n' },
      { fd: pipe, text: 'synced\n', sync: true },
    ]);
    const answer = writeBatch(bytes, plan, 3);
    assert.equal(answer?.[0], null);
    assert.equal(answer?.[1], null, 'a job without the flag is not synced');
    assert.equal(answer?.[2]?.code, 'EINVAL');
    assert.equal(answer?.[2]?.syscall, 'fdatasync');
    const got = Buffer.alloc(64);
    assert.equal(got.toString('utf8', 0, readSync(pipe, got)), 'unsynced\nsynced\n', 'the write came before its sync');
  } finally {
    closeSync(file);
    closeSync(pipe);
  }
  assert.equal(readFileSync(path.join(dir, 'file'), 'utf8'), 'kept\n');
});

test('a job whose write fails is not synced: its answer is the write\'s error', () => {
  const dir = tempDir();
  const readOnly = openSync(path.join(dir, 'ro'), 'w');
  closeSync(readOnly);
  const fd = openSync(path.join(dir, 'ro'), 'r');
  try {
    const { bytes, plan } = batch([{ fd, text: 'lost\n', sync: true }]);
    const answer = writeBatch(bytes, plan, 1);
    assert.equal(answer?.[0]?.code, 'EBADF');
    assert.equal(answer?.[0]?.syscall, 'write');
  } finally {
    closeSync(fd);
  }
});
