// One append-only file on its commit queue, called directly through the fs seam: appends that wait
// share one write and one record (or one fdatasync), a batch ends at the append that passes the
// cut, a failed append is cut back (a file it made goes again), a torn tail is kept or dropped
// before the next append, a new file's folders are synced, and every failure is told; with an idle
// log, an append's bytes go with its record (one hand-off).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { AppendFile } from '../../src/store/append-file.js';
import type { AppendFileOptions } from '../../src/store/append-file-options.js';
import type { Io } from '../../src/store/io.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Durability } from '../../src/store/state-store.js';
import { StoreError } from '../../src/store/store-error.js';
import { storeLog } from '../../src/store/store-log.js';
import { WriteAheadLog } from '../../src/store/wal.js';
import type { WalRecord } from '../../src/store/wal-record.js';
import { scanWal, WAL_REL } from '../../src/store/wal-record.js';
import { closeFailsIo, countingIo, errno, storeError } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { headOf } from '../../src/store/file-head.js';

const REL = 'transcripts/s.jsonl';

interface Made {
  file: string;
  dir: string;
  errors: string[];
  appender: AppendFile<string>;
}

function make(io: Io, durability: Durability, options: Partial<AppendFileOptions<string>> = {}, dir = tempDir()): Made {
  const errors: string[] = [];
  const file = path.join(dir, REL);
  const appender = new AppendFile<string>(io, file, REL, durability, {
    tornTail: (fragment) => (fragment.toString().startsWith('{') ? 'keep' : 'drop'),
    log: storeLog({ error: (m, err) => errors.push(err instanceof Error ? `${m}: ${err.message}` : m) }),
    ...options,
  });
  return { file, dir, errors, appender };
}

/** A stand-in for the shared log: records what it is given, fails when told to. */
function fakeWal(): { wal: WriteAheadLog; records: WalRecord[]; checkpoints: { n: number }; fail: { record?: Error; checkpoint?: Error } } {
  const records: WalRecord[] = [];
  const checkpoints = { n: 0 };
  const fail: { record?: Error; checkpoint?: Error } = {};
  const wal = {
    record: async (r: WalRecord) => {
      if (fail.record) throw fail.record;
      records.push(r);
    },
    checkpoint: async () => {
      if (fail.checkpoint) throw fail.checkpoint;
      checkpoints.n++;
    },
  } as unknown as WriteAheadLog;
  return { wal, records, checkpoints, fail };
}

/** An Io whose write(2)s of the appended file wait until opened: callers pile up behind the first. */
function heldWrites(): { io: Io; writes: Buffer[]; release: () => void } {
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const writes: Buffer[] = [];
  const io = withIo({
    write: async (fh, buf) => {
      writes.push(Buffer.from(buf));
      await held;
      return nodeIo.write(fh, buf);
    },
  });
  return { io, writes, release: () => release() };
}

test('appends that arrive while a write runs share the next write and one log record, in call order', async () => {
  const { io, writes, release } = heldWrites();
  const w = fakeWal();
  const seqs: string[][] = [];
  const written: [string[], number][] = [];
  const m = make(io, 'sync', { wal: w.wal, nextSeq: (tags) => (seqs.push(tags), 40 + tags.length), written: (tags, size) => written.push([tags, size]) });
  const first = m.appender.append(Buffer.from('a\n'), 'a');
  await new Promise(setImmediate);
  const rest = ['b', 'c', 'd'].map((x) => m.appender.append(Buffer.from(`${x}\n`), x));
  release();
  await Promise.all([first, ...rest]);
  assert.equal(readFileSync(m.file, 'utf8'), 'a\nb\nc\nd\n');
  assert.deepEqual(writes.map((b) => b.toString()), ['a\n', 'b\nc\nd\n']);
  const ino = statSync(m.file).ino;
  // The first append is fdatasynced in the file itself: its record carries only the seq after
  // it, and names the file by those bytes, as the next does (with its inode).
  assert.deepEqual(w.records, [
    { f: REL, i: ino, h: headOf(Buffer.from('a\n')), o: 0, d: '', s: 41 },
    { f: REL, i: ino, h: headOf(Buffer.from('a\n')), o: 2, d: 'b\nc\nd\n', s: 43 },
  ]);
  assert.deepEqual(seqs, [['a'], ['b', 'c', 'd']]);
  assert.deepEqual(written, [[['a'], 2], [['b', 'c', 'd'], 8]]);
  await m.appender.close();
});

test('in sync mode without a log every batch is fdatasynced; with a log only the file\'s first (its record would have no first bytes to name it by); in write mode none', async () => {
  for (const [mode, withWal, syncs, records] of [['sync', false, 2, 0], ['sync', true, 1, 1], ['write', true, 0, 0]] as const) {
    const { io, calls } = countingIo();
    const w = fakeWal();
    const m = make(io, mode, withWal ? { wal: w.wal } : {});
    await m.appender.append(Buffer.from('a\n'), 'a');
    await m.appender.append(Buffer.from('b\n'), 'b');
    // A durable write of the file is its write and its fdatasync in one call (Io.writeSynced).
    assert.deepEqual([calls.datasync + calls.writeSynced, w.records.length], [syncs, records], `${mode}${withWal ? ' with a log' : ''}`);
    assert.equal(w.records.every((r) => !('s' in r)), true, 'no seq without nextSeq');
    await m.appender.close();
  }
});

test('records name their file by its durable first bytes: what it held when opened, or its first append; never bytes only a record keeps', async () => {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'transcripts'));
  const w = fakeWal();
  // An existing file: its bytes at the open are durable (a checkpoint or the start's replay synced them).
  writeFileSync(path.join(dir, REL), 'x\n');
  const m = make(nodeIo, 'sync', { wal: w.wal }, dir);
  for (const b of ['a\n', 'b\n']) await m.appender.append(Buffer.from(b), b);
  // The handle dropped and opened again (the same file): still named by what was durable.
  await m.appender.exclusive(async () => undefined, { replaces: false });
  await m.appender.append(Buffer.from('c\n'), 'c\n');
  assert.deepEqual(w.records.map((r) => [r.o, r.h]), [[2, headOf(Buffer.from('x\n'))], [4, headOf(Buffer.from('x\n'))], [6, headOf(Buffer.from('x\n'))]]);
  await m.appender.close();
  // A new file: its first append is synced, and names it from then on.
  const n = make(nodeIo, 'sync', { wal: w.wal });
  w.records.length = 0;
  for (const b of ['a\n', 'b\n', 'c\n']) await n.appender.append(Buffer.from(b), b);
  assert.deepEqual(w.records.map((r) => [r.o, r.h]), [[2, headOf(Buffer.from('a\n'))], [4, headOf(Buffer.from('a\n'))]]);
  await n.appender.close();
});

test('after a compaction replaced the file, records name it by the new file\'s first bytes, also when its inode number is the old one\'s', async () => {
  const w = fakeWal();
  const io = withIo({ inode: async () => 7 }); // the file system handed the new file the old one's number
  const m: Made = make(io, 'sync', {
    wal: w.wal,
    cutAfter: (size) => size >= 6,
    afterCut: async () => {
      writeFileSync(`${m.file}.new`, 'kept\n');
      renameSync(`${m.file}.new`, m.file);
    },
  });
  for (const b of ['a\n', 'b\n', 'c\n']) await m.appender.append(Buffer.from(b), b);
  assert.equal(readFileSync(m.file, 'utf8'), 'kept\n', 'compacted');
  await m.appender.append(Buffer.from('d\n'), 'd\n');
  assert.deepEqual(w.records.at(-1), { f: REL, i: 7, h: headOf(Buffer.from('kept\n')), o: 5, d: 'd\n' });
  await m.appender.close();
});

test('a new file\'s folder and its parent are fsynced in sync mode (the file\'s name must survive too), not in write mode', async () => {
  for (const mode of ['sync', 'write'] as const) {
    const dirs: string[] = [];
    const io = withIo({ syncDir: async (d) => void dirs.push(d) });
    const m = make(io, mode);
    await m.appender.append(Buffer.from('a\n'), 'a');
    await m.appender.append(Buffer.from('b\n'), 'b');
    assert.deepEqual(dirs, mode === 'sync' ? [path.join(m.dir, 'transcripts'), m.dir] : [], mode);
    // An existing file: its name is already durable.
    await m.appender.close();
    const again = make(io, mode, {}, m.dir);
    dirs.length = 0;
    await again.appender.append(Buffer.from('c\n'), 'c');
    assert.deepEqual(dirs, [], `${mode}, existing file`);
    assert.equal(readFileSync(m.file, 'utf8'), 'a\nb\nc\n');
    await again.appender.close();
  }
});

test('the file is opened once for every batch after it, and settled() waits for what is queued', async () => {
  const { io, calls } = countingIo();
  const m = make(io, 'write');
  for (const x of ['a', 'b', 'c']) await m.appender.append(Buffer.from(`${x}\n`), x);
  assert.equal(calls.open, 1);
  void m.appender.append(Buffer.from('d\n'), 'd');
  await m.appender.settled();
  assert.equal(readFileSync(m.file, 'utf8'), 'a\nb\nc\nd\n');
  await m.appender.close();
  assert.deepEqual(m.errors, []);
});

test('an appender never used closes quietly; without a log, exclusive tasks and the cut run with nothing to checkpoint', async () => {
  const idle = make(nodeIo, 'sync');
  await idle.appender.close();
  assert.deepEqual(idle.errors, []);
  let cuts = 0;
  const m = make(nodeIo, 'write', { cutAfter: (size) => size > 2, afterCut: async () => void cuts++ });
  assert.equal(await m.appender.exclusive(async () => 'ran'), 'ran');
  await m.appender.append(Buffer.from('a\n'), 'a');
  await m.appender.append(Buffer.from('b\n'), 'b');
  assert.equal(cuts, 1);
  assert.deepEqual(m.errors, []);
  await m.appender.close();
  // afterCut without cutAfter never runs.
  const uncut = make(nodeIo, 'write', { afterCut: async () => void cuts++ });
  await uncut.appender.append(Buffer.from('a\n'), 'a');
  assert.equal(cuts, 1);
  await uncut.appender.close();
});

test('a new file or an empty one has no tail to repair', async () => {
  const seen: string[] = [];
  const m = make(nodeIo, 'sync', { tornTail: (f) => (seen.push(f.toString()), 'drop') });
  await m.appender.append(Buffer.from('a\n'), 'a');
  await m.appender.close();
  const dir = tempDir();
  mkdirSync(path.join(dir, 'transcripts'));
  writeFileSync(path.join(dir, REL), '');
  const empty = make(nodeIo, 'sync', { tornTail: (f) => (seen.push(f.toString()), 'drop') }, dir);
  await empty.appender.append(Buffer.from('a\n'), 'a');
  await empty.appender.close();
  assert.deepEqual(seen, []);
});

test('opened() is told the size and inode of the file it opened', async () => {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'transcripts'));
  writeFileSync(path.join(dir, REL), '{"x":1}\n');
  const told: [number, number][] = [];
  const m = make(nodeIo, 'write', { opened: (size, ino) => told.push([size, ino]) }, dir);
  await m.appender.append(Buffer.from('a\n'), 'a');
  assert.deepEqual(told, [[8, statSync(m.file).ino]]);
  await m.appender.close();
});

test('a batch ends with the append that passes the cut, and afterCut runs after the log is checkpointed', async () => {
  const { io, writes, release } = heldWrites();
  const w = fakeWal();
  const order: string[] = [];
  const m = make(io, 'sync', {
    wal: w.wal,
    cutAfter: (size) => size > 5,
    afterCut: async () => void order.push(`cut at ${statSync(path.join(m.dir, REL)).size}, checkpoints ${w.checkpoints.n}`),
  });
  const first = m.appender.append(Buffer.from('a\n'), 'a');
  await new Promise(setImmediate);
  const rest = ['bb', 'cc', 'dd'].map((x) => m.appender.append(Buffer.from(`${x}\n`), x));
  release();
  await Promise.all([first, ...rest]);
  // 2 + 3 = 5 is not past 5; + 3 = 8 is: bb and cc go together, then the cut, then dd.
  assert.deepEqual(writes.map((b) => b.toString()), ['a\n', 'bb\ncc\n', 'dd\n']);
  assert.deepEqual(order, ['cut at 8, checkpoints 1', 'cut at 11, checkpoints 2']);
  await m.appender.close();
});

test('a compaction whose checkpoint fails is skipped and said; the append itself succeeded', async () => {
  const w = fakeWal();
  let cuts = 0;
  const m = make(nodeIo, 'sync', { wal: w.wal, cutAfter: (size) => size > 1, afterCut: async () => void cuts++ });
  w.fail.checkpoint = errno('EIO', 'fsync');
  await m.appender.append(Buffer.from('a\n'), 'a');
  assert.equal(cuts, 0);
  assert.deepEqual(m.errors, [`compaction of ${REL} skipped: the write-ahead log could not be checkpointed first; retried after the next append: EIO: i/o error, fsync '/abs/secret/path'`]);
  delete w.fail.checkpoint;
  await m.appender.append(Buffer.from('b\n'), 'b');
  assert.equal(cuts, 1);
  await m.appender.close();
});

test('exclusive tasks run alone with the file closed; one that replaces the file checkpoints the log first, and fails without running when that fails', async () => {
  const w = fakeWal();
  const m = make(nodeIo, 'sync', { wal: w.wal });
  await m.appender.append(Buffer.from('a\n'), 'a');
  assert.equal(await m.appender.exclusive(async () => 'ran', { replaces: false }), 'ran');
  assert.equal(w.checkpoints.n, 0);
  assert.equal(await m.appender.exclusive(async () => 'ran'), 'ran');
  assert.equal(w.checkpoints.n, 1);
  w.fail.checkpoint = errno('EIO', 'fsync');
  let ran = false;
  await assert.rejects(() => m.appender.exclusive(async () => (ran = true)), { code: 'EIO' });
  assert.equal(ran, false);
  await m.appender.close();
});

test('a failed append to a file it created removes the file; to an existing file cuts it back to its size', async () => {
  let fail = false;
  const io = withIo({
    write: async (fh, buf) => {
      if (!fail) return nodeIo.write(fh, buf);
      await nodeIo.write(fh, buf.subarray(0, 1)); // half a line reached the file
      throw errno('ENOSPC');
    },
  });
  fail = true;
  const m = make(io, 'write');
  await assert.rejects(() => m.appender.append(Buffer.from('a\n'), 'a'), storeError('io', [`append to ${REL}: ENOSPC`], 'ENOSPC'));
  assert.equal(existsSync(m.file), false, 'the file this append made goes again');
  fail = false;
  await m.appender.append(Buffer.from('b\n'), 'b');
  fail = true;
  await assert.rejects(() => m.appender.append(Buffer.from('c\n'), 'c'), storeError('io', [], 'ENOSPC'));
  assert.equal(readFileSync(m.file, 'utf8'), 'b\n');
  fail = false;
  await m.appender.append(Buffer.from('d\n'), 'd');
  assert.equal(readFileSync(m.file, 'utf8'), 'b\nd\n');
  assert.deepEqual(m.errors, []);
  await m.appender.close();
});

test('a failed log record fails the append, names the file and the record, and cuts the file back', async () => {
  const w = fakeWal();
  const m = make(nodeIo, 'sync', { wal: w.wal });
  await m.appender.append(Buffer.from('a\n'), 'a');
  w.fail.record = new StoreError('io', 'append to .herrscher-state/wal.log: EIO: i/o error', { code: 'EIO' }, 'EIO');
  await assert.rejects(() => m.appender.append(Buffer.from('b\n'), 'b'),
    (err: unknown) => err instanceof StoreError && err.code === 'EIO' && (err.data as { code?: string }).code === 'EIO'
      && err.message === `append to ${REL}: EIO: its write-ahead record failed (append to .herrscher-state/wal.log: EIO: i/o error)`);
  w.fail.record = new StoreError('io', 'no code');
  await assert.rejects(() => m.appender.append(Buffer.from('c\n'), 'c'), (err: unknown) => err instanceof Error && err.message.startsWith(`append to ${REL}: EIO: its write-ahead record failed (no code)`));
  assert.equal(readFileSync(m.file, 'utf8'), 'a\n');
  await m.appender.close();
});

test('with the log idle, an append\'s bytes go with its record (one call); one whose bytes fail is refused naming the file, cut back, and leaves no record', async () => {
  let fail = false;
  const { io, calls } = countingIo({ write: (fh, buf) => (fail && buf.toString() === 'b\n' ? Promise.reject(errno('ENOSPC')) : nodeIo.write(fh, buf)) });
  const dir = tempDir();
  const wal = await WriteAheadLog.open(io, dir, { log: storeLog({}), syncFile: async () => undefined, beforeEmpty: async () => undefined });
  const m = make(io, 'sync', { wal }, dir);
  try {
    await m.appender.append(Buffer.from('a\n'), 'a');
    assert.deepEqual([calls.writeSynced, calls.writeLogged], [1, 0], 'a first append is synced in the file itself');
    await m.appender.append(Buffer.from('b\n'), 'b');
    assert.deepEqual([calls.write, calls.writeLogged], [0, 1], 'its bytes went with its record');
    fail = true;
    await assert.rejects(() => m.appender.append(Buffer.from('b\n'), 'c'), storeError('io', [`append to ${REL}: ENOSPC`], 'ENOSPC'));
    fail = false;
    // The log busy (a record of another file being written): the bytes are written at once, the record follows.
    const other = wal.record({ f: 'transcripts/other.jsonl', i: 1, o: 0, d: 'x\n' });
    await m.appender.append(Buffer.from('d\n'), 'd');
    await other;
    assert.deepEqual([calls.write, calls.writeLogged], [1, 2], 'the refused one went with its record too; the last one alone');
    assert.equal(readFileSync(m.file, 'utf8'), 'a\nb\nd\n');
    assert.deepEqual(scanWal(readFileSync(path.join(dir, WAL_REL))).records.map((x) => [x.f, x.o, x.d]),
      [[REL, 2, 'b\n'], ['transcripts/other.jsonl', 0, 'x\n'], [REL, 4, 'd\n']]);
  } finally {
    await m.appender.close();
    await wal.close();
  }
});

test('when cutting back fails, it is said, and the next append repairs the tail first', async () => {
  let fail = false;
  const io = withIo({
    write: async (fh, buf) => {
      if (!fail) return nodeIo.write(fh, buf);
      await nodeIo.write(fh, buf.subarray(0, 2));
      throw errno('EIO');
    },
    truncate: (fh, len) => (fail ? Promise.reject(errno('EROFS', 'ftruncate')) : nodeIo.truncate(fh, len)),
  });
  const m = make(io, 'write');
  await m.appender.append(Buffer.from('a\n'), 'a');
  fail = true;
  await assert.rejects(() => m.appender.append(Buffer.from('xyz\n'), 'x'), storeError('io', [], 'EIO'));
  assert.equal(readFileSync(m.file, 'utf8'), 'a\nxy', 'the fragment is still there');
  assert.equal(m.errors.length, 1);
  assert.ok(m.errors[0]?.startsWith(`cutting ${REL} back after a failed append failed; its tail is repaired before the next append`), m.errors[0]);
  fail = false;
  await m.appender.append(Buffer.from('b\n'), 'b');
  assert.equal(readFileSync(m.file, 'utf8'), 'a\nb\n', 'the handle was dropped: the reopen cut the fragment');
  await m.appender.close();
});

test('a torn tail is kept and ended, or dropped, before the next append; synced in sync mode', async () => {
  for (const [tail, after] of [['{"torn":1}', 'x\n{"torn":1}\nnext\n'], ['garbage', 'x\nnext\n'], ['', 'x\nnext\n']] as const) {
    for (const mode of ['sync', 'write'] as const) {
      const dir = tempDir();
      mkdirSync(path.join(dir, 'transcripts'));
      writeFileSync(path.join(dir, REL), `x\n${tail}`);
      const { io, calls } = countingIo();
      const m = make(io, mode, {}, dir);
      await m.appender.append(Buffer.from('next\n'), 'n');
      assert.equal(readFileSync(m.file, 'utf8'), after, `${tail} (${mode})`);
      // One fdatasync for the append (with its write: Io.writeSynced), one more for a repair.
      assert.equal(calls.writeSynced, mode === 'sync' ? 1 : 0, `${tail} (${mode})`);
      assert.equal(calls.datasync, mode === 'sync' && tail ? 1 : 0, `${tail} (${mode})`);
      await m.appender.close();
    }
  }
});

test('a torn tail longer than the 64 KiB read step, and a file that is only a fragment, are found whole', async () => {
  for (const [before, after] of [
    [`x\n${'g'.repeat(200 * 1024)}`, 'x\nnext\n'],
    ['g'.repeat(70 * 1024), 'next\n'],
    ['\ngarbage', '\nnext\n'],
    [`{${'k'.repeat(70 * 1024)}`, `{${'k'.repeat(70 * 1024)}\nnext\n`],
    [`${'l\n'.repeat(40 * 1024)}g`, `${'l\n'.repeat(40 * 1024)}next\n`],
  ] as const) {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'transcripts'));
    writeFileSync(path.join(dir, REL), before);
    const m = make(nodeIo, 'write', {}, dir);
    await m.appender.append(Buffer.from('next\n'), 'n');
    assert.equal(readFileSync(m.file, 'utf8') === after, true, `${before.slice(0, 12)}… (${before.length} bytes)`);
    await m.appender.close();
  }
});

test('an open that fails is told as an append failure and creates nothing; a failing repair closes the file and says why', async () => {
  // Only the exclusive create fails: an error other than "it exists" is not worked around.
  const m = make(withIo({ open: (f, fl, mode) => (fl === 'ax' ? Promise.reject(errno('EACCES', 'open')) : nodeIo.open(f, fl, mode)) }), 'write');
  await assert.rejects(() => m.appender.append(Buffer.from('a\n'), 'a'), storeError('io', [`append to ${REL}: EACCES`], 'EACCES'));
  assert.equal(existsSync(m.file), false);
  const dir = tempDir();
  mkdirSync(path.join(dir, 'transcripts'));
  writeFileSync(path.join(dir, REL), 'x\ntorn');
  const handles: FileHandle[] = [];
  const failing = withIo({
    open: async (f, fl, mode) => {
      const fh = await nodeIo.open(f, fl, mode);
      handles.push(fh);
      return fh;
    },
    read: () => Promise.reject(errno('EIO', 'read')),
  });
  const r = make(failing, 'write', {}, dir);
  await assert.rejects(() => r.appender.append(Buffer.from('a\n'), 'a'), storeError('io', [`append to ${REL}: EIO`], 'EIO'));
  assert.equal(readFileSync(r.file, 'utf8'), 'x\ntorn');
  assert.equal(handles.length, 1);
  assert.equal((await handles[0]?.stat().then(() => 'open', (err: NodeJS.ErrnoException) => err.code)), 'EBADF', 'the handle was closed');
});

test('a close that fails after a failed repair is logged; the caller hears of the repair\'s failure', async () => {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'transcripts'));
  writeFileSync(path.join(dir, REL), 'x\ntorn');
  const failing = closeFailsIo({ read: () => Promise.reject(errno('EIO', 'read')) });
  const m = make(failing, 'write', {}, dir);
  await assert.rejects(() => m.appender.append(Buffer.from('a\n'), 'a'), storeError('io', [`append to ${REL}: EIO: i/o error`], 'EIO'));
  assert.deepEqual(m.errors, [`closing ${REL} failed as well, after a failed open: EIO: i/o error, close '/abs/secret/path'`]);
});

test('a close of the file that fails is logged: every write through it was already answered', async () => {
  const io = closeFailsIo();
  const m = make(io, 'write');
  await m.appender.append(Buffer.from('a\n'), 'a');
  await m.appender.close();
  assert.deepEqual(m.errors, [`closing ${REL} failed: EIO: i/o error, close '/abs/secret/path'`]);
  assert.equal(readFileSync(m.file, 'utf8'), 'a\n');
});
