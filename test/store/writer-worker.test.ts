// The writer thread's worker module on its own: a batch's jobs are written whole and in order
// from the shared bytes, and a failed job answers its own error while the others are written;
// a whole-file replace and the worker's loop, run on this thread.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, lstatSync, openSync, readdirSync, readFileSync, readSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { CTL, GUARD_FAILED, PLAN_DATASYNC } from '../../src/store/writer-worker-control.js';
import type { ReplaceJob, ReplaceOps } from '../../src/store/writer-worker.js';
import { answerReplace, fsReplaceOps, replaceFile, serve, writeBatch } from '../../src/store/writer-worker.js';
import { tempDir } from '../helpers/temp-dir.js';

/** The shared regions writer-thread.ts fills: the jobs' bytes back to back, then fd, length, flags and guard (1 + the index of the job it depends on) per job. */
function batch(jobs: { fd: number; text: string; sync?: boolean; guard?: number }[]): { bytes: Buffer; plan: Int32Array } {
  const bytes = Buffer.from(jobs.map((j) => j.text).join(''));
  const plan = new Int32Array(jobs.flatMap((j) => [j.fd, Buffer.byteLength(j.text), j.sync ? PLAN_DATASYNC : 0, j.guard ?? 0]));
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

test('a job guarded by an earlier one is left out when that one failed and written when it was; a job of no bytes flagged to sync is the sync alone', () => {
  const dir = tempDir();
  const file = path.join(dir, 'file');
  const log = openSync(path.join(dir, 'log'), 'a');
  const ok = openSync(file, 'a');
  const readOnly = openSync(file, 'r');
  // The sync of a FIFO fails (EINVAL): the answer of the no-bytes job shows it was tried.
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const pipe = openSync(fifo, 'r+');
  try {
    const { bytes, plan } = batch([
      { fd: ok, text: 'line a\n' },
      { fd: readOnly, text: 'line b\n' },
      { fd: log, text: 'record a\n', guard: 1 },
      { fd: log, text: 'record b\n', guard: 2 },
      { fd: log, text: 'record c\n' },
      { fd: pipe, text: '', sync: true },
    ]);
    const answer = writeBatch(bytes, plan, 6);
    assert.equal(answer?.[0], null);
    assert.equal(answer?.[1]?.code, 'EBADF');
    assert.equal(answer?.[2], null, 'its guard was written');
    assert.equal(answer?.[3]?.code, GUARD_FAILED, 'its guard failed');
    assert.equal(answer?.[4], null, 'unguarded, written whatever failed before it');
    assert.equal(answer?.[5]?.code, 'EINVAL');
    assert.equal(answer?.[5]?.syscall, 'fdatasync');
  } finally {
    for (const fd of [log, ok, readOnly, pipe]) closeSync(fd);
  }
  assert.equal(readFileSync(file, 'utf8'), 'line a\n');
  assert.equal(readFileSync(path.join(dir, 'log'), 'utf8'), 'record a\nrecord c\n', 'the bytes after a left-out job are its successors\'');
});

// replaceFile and answerReplace on this thread, through the ReplaceOps seam: what the worker runs
// for each replace, reached here where the mutation run's coverage hook sees it.

const opts = { mode: 0o600, sync: false };
const fresh = (): { dir: string; file: string } => {
  const dir = tempDir();
  return { dir, file: path.join(dir, 'state.json') };
};
/** The open handles of this process (Linux), to tell a handle left open. */
const openHandles = (): number => readdirSync('/proc/self/fd').length;

test('a replace writes the whole file, closes what it opened, and answers the stamp of the file now at the name', () => {
  const { dir, file } = fresh();
  const before = existsSync('/proc/self/fd') ? openHandles() : 0;
  const answer = answerReplace({ file, region: new SharedArrayBuffer(8), length: 3, mode: 0o600, sync: true });
  if (existsSync('/proc/self/fd')) assert.equal(openHandles(), before, 'no handle left open');
  const st = statSync(file);
  assert.deepEqual(answer, { stamp: { ino: st.ino, size: 3, mtimeMs: st.mtimeMs } });
  assert.deepEqual(readdirSync(dir), ['state.json']);
  const failed = answerReplace({ file: path.join(dir, 'missing', 'x'), region: new SharedArrayBuffer(8), length: 3, mode: 0o600, sync: false });
  assert.ok('error' in failed && failed.error.code === 'ENOENT' && typeof failed.error.errno === 'number' && failed.error.syscall === 'open', JSON.stringify(failed));
  assert.match('error' in failed ? failed.error.message : '', /ENOENT/);
});

test('a short write(2) into the temp file is carried on from where it stopped', () => {
  const { file } = fresh();
  const data = Buffer.from(Array.from({ length: 2500 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(''));
  const calls: [number, number][] = [];
  const ops: ReplaceOps = {
    ...fsReplaceOps,
    write: (fd, buf, off, len) => {
      calls.push([off, len]);
      return fsReplaceOps.write(fd, buf, off, Math.min(len, 1000));
    },
  };
  replaceFile(file, data, opts, ops);
  assert.deepEqual(calls, [[0, 2500], [1000, 1500], [2000, 500]]);
  assert.ok(readFileSync(file).equals(data));
});

test('a temp file that is not a fresh regular file of ours gets no byte, and its handle is closed', () => {
  const cases: [string, Partial<ReturnType<ReplaceOps['fstat']>>][] = [
    ['not a regular file', { isFile: () => false }],
    ['a second link', { nlink: 2 }],
    ['already holding bytes', { size: 1 }],
    ['another user\'s', { uid: (process.getuid?.() ?? 0) + 1 }],
  ];
  for (const [what, differs] of cases) {
    const { file } = fresh();
    writeFileSync(file, 'old');
    let writes = 0;
    let closes = 0;
    const ops: ReplaceOps = {
      ...fsReplaceOps,
      fstat: (fd) => {
        const st = fsReplaceOps.fstat(fd);
        return { isFile: () => st.isFile(), nlink: st.nlink, size: st.size, uid: st.uid, ...differs };
      },
      write: (...args) => {
        writes++;
        return fsReplaceOps.write(...args);
      },
      close: (fd) => {
        closes++;
        fsReplaceOps.close(fd);
      },
    };
    assert.throws(() => replaceFile(file, Buffer.from('new'), opts, ops),
      (e: NodeJS.ErrnoException) => e.code === 'EEXIST' && e.syscall === 'open' && /EEXIST: the temp file state\.json\.\d+ is not a fresh file of ours/.test(e.message), what);
    assert.equal(writes, 0, what);
    assert.equal(closes, 1, what);
    assert.equal(readFileSync(file, 'utf8'), 'old', what);
  }
});

test('the temp file\'s open: a link there is named as one, any other failure is passed on as it is', () => {
  for (const [code, expect] of [['ELOOP', /^ELOOP: a symbolic link is in the way \(the store follows none inside the state dir\)$/], ['EACCES', /^EACCES: injected$/]] as const) {
    const { file } = fresh();
    const ops: ReplaceOps = {
      ...fsReplaceOps,
      open: () => {
        throw Object.assign(new Error(`${code}: injected`), { code, syscall: 'open' });
      },
    };
    assert.throws(() => replaceFile(file, Buffer.from('new'), opts, ops), (e: NodeJS.ErrnoException) => e.code === code && e.syscall === 'open' && expect.test(e.message));
  }
});

test('a link at the name is replaced through a fresh name beside it; a failed rename removes that name and reports the rename\'s error', () => {
  const { dir, file } = fresh();
  const target = path.join(tempDir(), 'elsewhere');
  writeFileSync(target, 'not ours');
  symlinkSync(target, file);
  const renamed: [string, string][] = [];
  const ops: ReplaceOps = {
    ...fsReplaceOps,
    rename: (from, to) => {
      renamed.push([from, to]);
      throw Object.assign(new Error('EXDEV: injected'), { code: 'EXDEV', syscall: 'rename' });
    },
  };
  assert.throws(() => replaceFile(file, Buffer.from('new'), opts, ops), (e: NodeJS.ErrnoException) => e.code === 'EXDEV');
  assert.equal(renamed.length, 1);
  assert.match(path.basename(renamed[0]![0]), /^state\.json\.\d+$/);
  assert.equal(renamed[0]![1], file);
  assert.deepEqual(readdirSync(dir), ['state.json'], 'the fresh name is removed');
  assert.equal(readFileSync(target, 'utf8'), 'not ours');
  // The removal failing too: the rename's error is still the one reported.
  assert.throws(() => replaceFile(file, Buffer.from('new'), opts, {
    ...ops,
    unlink: () => {
      throw new Error('unlink failed');
    },
  }), (e: NodeJS.ErrnoException) => e.code === 'EXDEV');
  // Done for real: the link itself is replaced, by a file of the mode asked for.
  const stamp = replaceFile(file, Buffer.from('new'), { mode: 0o640, sync: false });
  assert.equal(readFileSync(file, 'utf8'), 'new');
  assert.equal(lstatSync(file).isSymbolicLink(), false);
  assert.equal(statSync(file).mode & 0o777, 0o640);
  assert.equal(stamp.size, 3);
});

test('a file removed right after it was written is an ENOENT naming it', () => {
  const { file } = fresh();
  let looks = 0;
  const ops: ReplaceOps = { ...fsReplaceOps, lstat: (f) => (++looks === 1 ? fsReplaceOps.lstat(f) : undefined) };
  assert.throws(() => replaceFile(file, Buffer.from('x'), opts, ops),
    (e: NodeJS.ErrnoException) => e.code === 'ENOENT' && e.syscall === 'lstat' && e.message === 'ENOENT: state.json was removed right after it was written');
});

test('serve, on this thread: each wake writes the batch posted, then answers every replace waiting; a wake with no batch answers none', () => {
  const dir = tempDir();
  const a = openSync(path.join(dir, 'a'), 'a');
  const ctl = new Int32Array(new SharedArrayBuffer(CTL.LENGTH * 4));
  const { bytes, plan } = batch([{ fd: a, text: 'one\n' }, { fd: a, text: 'two\n' }]);
  const region = new SharedArrayBuffer(8);
  new Uint8Array(region).set(Buffer.from('{}'));
  const replaces: ReplaceJob[] = [
    { file: path.join(dir, 'x.json'), region, length: 2, mode: 0o600, sync: false },
    { file: path.join(dir, 'missing', 'y.json'), region, length: 2, mode: 0o600, sync: false },
  ];
  const answers: unknown[] = [];
  // Posted as the main thread posts: the job count, then a wake.
  Atomics.store(ctl, CTL.JOBS, 2);
  Atomics.add(ctl, CTL.WAKE, 1);
  let turns = 0;
  const done = new Error('served');
  const take = (): ReplaceJob | undefined => {
    const job = replaces.shift();
    if (job) return job;
    // A second wake with nothing posted, then stop the loop (it never returns on its own).
    if (++turns === 1) Atomics.add(ctl, CTL.WAKE, 1);
    else throw done;
    return undefined;
  };
  try {
    assert.throws(() => serve(ctl, bytes, plan, take, (x) => answers.push(x)), (e) => e === done);
  } finally {
    closeSync(a);
  }
  assert.equal(answers.length, 3, JSON.stringify(answers));
  assert.equal(answers[0], null, 'the batch first, all written');
  assert.ok(answers[1] !== null && typeof answers[1] === 'object' && 'stamp' in answers[1]);
  assert.ok(answers[2] !== null && typeof answers[2] === 'object' && 'error' in answers[2]);
  assert.equal(Atomics.load(ctl, CTL.JOBS), 0, 'the batch was taken');
  assert.equal(readFileSync(path.join(dir, 'a'), 'utf8'), 'one\ntwo\n');
  assert.equal(readFileSync(path.join(dir, 'x.json'), 'utf8'), '{}');
});
