// The write-ahead log object called directly through the fs seam: records that wait share one
// write and one fdatasync, a failed batch is cut back (and the log refuses records until a
// checkpoint when even that fails), a checkpoint syncs every file written since and hands over
// the seqs before it empties the log, callers share a queued checkpoint, one past the size bound
// runs by itself and is retried when it fails, and a close that cannot empty the log says so.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { errnoOf } from '../../src/common/errno.js';
import type { Io } from '../../src/store/io.js';
import { LineNotWritten, nodeIo, withIo } from '../../src/store/io.js';
import { storeLog } from '../../src/store/store-log.js';
import type { WalRecord } from '../../src/store/wal-record.js';
import { WriteAheadLog } from '../../src/store/wal.js';
import { scanWal, WAL_REL } from '../../src/store/wal-record.js';
import { closeFailsIo, countingIo, errno, storeError } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { sealLine } from '../../src/store/sealed-line.js';

interface Opened {
  dir: string;
  file: string;
  wal: WriteAheadLog;
  synced: string[];
  order: string[];
  errors: string[];
  health: { failed: number; succeeded: number };
  /** Resolves at the next checkpoint that succeeds. */
  nextSuccess: () => Promise<void>;
}

async function open(io: Io = nodeIo, extra: { checkpointBytes?: number; syncFile?: (rel: string) => Promise<void> } = {}): Promise<Opened> {
  const dir = tempDir();
  const synced: string[] = [];
  const order: string[] = [];
  const errors: string[] = [];
  const health = { failed: 0, succeeded: 0 };
  let waiters: (() => void)[] = [];
  const log = storeLog({
    error: (m) => errors.push(m),
    health: {
      recordError: () => undefined,
      checkpointFailed: () => void health.failed++,
      checkpointSucceeded: () => {
        health.succeeded++;
        const w = waiters;
        waiters = [];
        for (const f of w) f();
      },
      stateUnreadable: () => undefined,
    },
  });
  const wal = await WriteAheadLog.open(io, dir, {
    log,
    syncFile: extra.syncFile ?? (async (rel) => void synced.push(rel)),
    beforeEmpty: async () => void order.push(`before empty: ${statSync(path.join(dir, WAL_REL)).size > 0 ? 'records still there' : 'already empty'}`),
    checkpointBytes: extra.checkpointBytes,
  });
  return {
    dir, file: path.join(dir, WAL_REL), wal, synced, order, errors, health,
    nextSuccess: () => new Promise<void>((resolve) => waiters.push(resolve)),
  };
}

const r = (f: string, o: number, d: string, s?: number): WalRecord => ({ f, i: 1, o, d, ...(s === undefined ? {} : { s }) });

test('a record is written as one sealed line of its JSON; bytes counts what is in the log', async (t) => {
  const o = await open();
  t.after(() => o.wal.close());
  await o.wal.record(r('transcripts/a.jsonl', 0, 'x\n', 3));
  const text = readFileSync(o.file, 'utf8');
  const json = JSON.stringify(r('transcripts/a.jsonl', 0, 'x\n', 3));
  assert.equal(text, sealLine(json));
  assert.equal(o.wal.bytes, Buffer.byteLength(text));
  await o.wal.record(r('participants/a.log', 0, 'é\n'));
  assert.equal(o.wal.bytes, statSync(o.file).size);
  assert.deepEqual(scanWal(readFileSync(o.file)).records.map((x) => x.f), ['transcripts/a.jsonl', 'participants/a.log']);
});

test('a log that exists is opened with its size; one that cannot be opened is an error naming it', async () => {
  const dir = tempDir();
  mkdirSync(path.join(dir, '.herrscher-state'));
  writeFileSync(path.join(dir, WAL_REL), 'abc');
  const wal = await WriteAheadLog.open(nodeIo, dir, { log: storeLog({}), syncFile: async () => undefined, beforeEmpty: async () => undefined });
  assert.equal(wal.bytes, 3);
  await wal.close();
  const failing = withIo({ mkdir: () => Promise.reject(errno('EACCES', 'mkdir')) });
  await assert.rejects(() => WriteAheadLog.open(failing, dir, { log: storeLog({}), syncFile: async () => undefined, beforeEmpty: async () => undefined }),
    storeError('io', [`open ${WAL_REL}: EACCES`], 'EACCES'));
  const elsewhere = await WriteAheadLog.open(nodeIo, dir, { log: storeLog({}), syncFile: async () => undefined, beforeEmpty: async () => undefined, rel: 'side/wal.log' });
  await elsewhere.record(r('transcripts/a.jsonl', 0, 'x\n'));
  assert.ok(statSync(path.join(dir, 'side/wal.log')).size > 0);
  await elsewhere.close();
});

test('records that arrive while one is written share the next write and its one fdatasync', async (t) => {
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  let first = true;
  const { io, calls } = countingIo({
    write: async (fh, buf) => {
      if (first) {
        first = false;
        await held;
      }
      return nodeIo.write(fh, buf);
    },
  });
  const o = await open(io);
  t.after(() => o.wal.close());
  const a = o.wal.record(r('transcripts/a.jsonl', 0, 'a\n'));
  await new Promise(setImmediate);
  const rest = ['b', 'c', 'd'].map((x, i) => o.wal.record(r('transcripts/a.jsonl', 2 + 2 * i, `${x}\n`)));
  release();
  await Promise.all([a, ...rest]);
  assert.equal(calls.writeSynced, 2, 'two writes, each with its fdatasync');
  assert.deepEqual(scanWal(readFileSync(o.file)).records.map((x) => x.d), ['a\n', 'b\n', 'c\n', 'd\n']);
});

test('a checkpoint syncs each file written since once, lets the seqs be written down, then empties and syncs the log', async (t) => {
  const { io, calls } = countingIo();
  const o = await open(io);
  t.after(() => o.wal.close());
  await o.wal.record(r('transcripts/a.jsonl', 0, 'a\n'));
  await o.wal.record(r('transcripts/a.jsonl', 2, 'b\n'));
  await o.wal.record(r('participants/a.log', 0, 'u\n'));
  const syncsBefore = calls.datasync;
  await o.wal.checkpoint();
  assert.deepEqual(o.synced.sort(), ['participants/a.log', 'transcripts/a.jsonl']);
  assert.deepEqual(o.order, ['before empty: records still there']);
  assert.equal(statSync(o.file).size, 0);
  assert.equal(o.wal.bytes, 0);
  assert.equal(calls.datasync - syncsBefore, 1, 'the emptied log is synced');
  assert.deepEqual(o.health, { failed: 0, succeeded: 1 });
  // Nothing written since: nothing to sync.
  await o.wal.checkpoint();
  assert.equal(o.synced.length, 2);
});

test('callers that ask while a checkpoint waits its turn share it; one asked after it started gets its own', async (t) => {
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  let hold = true;
  const { io, calls } = countingIo({
    write: async (fh, buf) => {
      if (hold) {
        hold = false;
        await held;
      }
      return nodeIo.write(fh, buf);
    },
  });
  const o = await open(io);
  t.after(() => o.wal.close());
  const rec = o.wal.record(r('transcripts/a.jsonl', 0, 'a\n'));
  await new Promise(setImmediate);
  const c1 = o.wal.checkpoint();
  const c2 = o.wal.checkpoint();
  assert.equal(c1, c2);
  release();
  await Promise.all([rec, c1]);
  assert.equal(calls.truncate, 1);
  await o.wal.checkpoint();
  assert.equal(calls.truncate, 2);
});

test('a checkpoint that fails is an error naming the log, reported unhealthy; the files written since are synced again by the next', async (t) => {
  let fail = true;
  const synced: string[] = [];
  const o = await open(nodeIo, { syncFile: async (rel) => (fail ? Promise.reject(errno('EIO', 'fsync')) : void synced.push(rel)) });
  t.after(() => o.wal.close());
  await o.wal.record(r('transcripts/a.jsonl', 0, 'a\n'));
  await assert.rejects(() => o.wal.checkpoint(), storeError('io', [`checkpoint ${WAL_REL}: EIO`], 'EIO'));
  assert.deepEqual(o.health, { failed: 1, succeeded: 0 });
  assert.ok(statSync(o.file).size > 0, 'the records are kept');
  fail = false;
  await o.wal.checkpoint();
  assert.deepEqual(synced, ['transcripts/a.jsonl']);
  assert.equal(statSync(o.file).size, 0);
});

test('a failed record write is cut back from the log; when that fails too, records are refused until a checkpoint succeeds', async (t) => {
  let failWrite = false;
  let failCut = false;
  const io = withIo({
    write: async (fh, buf) => {
      if (!failWrite) return nodeIo.write(fh, buf);
      await nodeIo.write(fh, buf.subarray(0, 5));
      throw errno('ENOSPC');
    },
    truncate: (fh, len) => (failCut ? Promise.reject(errno('EIO', 'ftruncate')) : nodeIo.truncate(fh, len)),
  });
  const o = await open(io);
  t.after(() => o.wal.close());
  await o.wal.record(r('transcripts/a.jsonl', 0, 'a\n'));
  const size = statSync(o.file).size;
  failWrite = true;
  await assert.rejects(() => o.wal.record(r('transcripts/a.jsonl', 2, 'b\n')), storeError('io', [`append to ${WAL_REL}: ENOSPC`], 'ENOSPC'));
  assert.equal(statSync(o.file).size, size, 'cut back');
  assert.equal(o.wal.bytes, size);
  failCut = true;
  await assert.rejects(() => o.wal.record(r('transcripts/a.jsonl', 2, 'b\n')), storeError('io', [`append to ${WAL_REL}: ENOSPC`], 'ENOSPC'));
  assert.deepEqual(o.errors, [`${WAL_REL} could not be cut back after a failed write; appends are refused until a checkpoint empties it (the next append tries one)`]);
  failWrite = false;
  await assert.rejects(() => o.wal.record(r('transcripts/a.jsonl', 2, 'b\n')), storeError('io', [`append to ${WAL_REL}: EIO`], 'EIO'));
  failCut = false;
  await o.wal.checkpoint();
  await o.wal.record(r('transcripts/a.jsonl', 2, 'b\n'));
  assert.deepEqual(scanWal(readFileSync(o.file)).records.map((x) => x.d), ['b\n']);
});

test('a record with its line: the line lands before the record; one whose line fails is refused with LineNotWritten and left out, the rest of its batch kept', async (t) => {
  for (const real of [true, false]) {
    // Real: the one hand-off of an idle writer thread; a seam's: the calls one after the other.
    const o = await open(real ? nodeIo : withIo({ write: (fh, buf) => nodeIo.write(fh, buf) }));
    t.after(() => o.wal.close());
    const a = await fs.open(path.join(o.dir, 'a'), 'a');
    const readOnly = await fs.open(path.join(o.dir, 'a'), 'r');
    try {
      await o.wal.record(r('a', 0, 'one\n'), { fh: a, buf: Buffer.from('one\n') });
      assert.equal(readFileSync(path.join(o.dir, 'a'), 'utf8'), 'one\n');
      const first = o.wal.record(r('a', 4, 'two\n'), { fh: a, buf: Buffer.from('two\n') });
      // These wait for the first's batch, and share the next one.
      const failed = o.wal.record(r('b', 0, 'lost\n'), { fh: readOnly, buf: Buffer.from('lost\n') });
      const third = o.wal.record(r('a', 8, 'three\n'), { fh: a, buf: Buffer.from('three\n') });
      await first;
      await assert.rejects(failed, (e) => e instanceof LineNotWritten && errnoOf(e.cause) === 'EBADF');
      await third;
      assert.equal(readFileSync(path.join(o.dir, 'a'), 'utf8'), 'one\ntwo\nthree\n', `real ${real}`);
      assert.deepEqual(scanWal(readFileSync(o.file)).records.map((x) => x.d), ['one\n', 'two\n', 'three\n']);
      assert.equal(o.wal.bytes, statSync(o.file).size, 'the left-out record is not counted');
      await o.wal.checkpoint();
      assert.deepEqual(o.synced, ['a'], 'only the files whose records are in the log are synced by the checkpoint');
    } finally {
      await a.close();
      await readOnly.close();
    }
  }
});

test('a log past its bound is checkpointed inside the record that crossed it; a failure is logged and tried again by a record past the backoff', async (t) => {
  let failures = 2;
  const synced: string[] = [];
  const o = await open(nodeIo, {
    checkpointBytes: 100,
    syncFile: async (rel) => {
      if (failures-- > 0) throw errno('EIO', 'fsync');
      synced.push(rel);
    },
  });
  t.after(() => o.wal.close());
  await o.wal.record(r('transcripts/a.jsonl', 0, 'small\n'));
  assert.equal(o.health.failed + o.health.succeeded, 0, 'under the bound: no checkpoint');
  await o.wal.record(r('transcripts/a.jsonl', 6, `${'x'.repeat(100)}\n`));
  assert.deepEqual(o.health, { failed: 1, succeeded: 0 }, 'the record past the bound tried it before it resolved');
  assert.match(o.errors[0] ?? '', new RegExp(`^checkpoint of ${WAL_REL} failed; appends stay durable \\(their records are kept in the log, now (\\d+) bytes, and replayed at the next start\\); tried again by the append that takes the log past (\\d+) bytes$`));
  const [, now, next] = /now (\d+) bytes.*past (\d+) bytes/.exec(o.errors[0] ?? '') ?? [];
  assert.equal(Number(next) - Number(now), Math.ceil(100 / 16), 'the first backoff is 1/16 of the bound');
  await o.wal.record(r('transcripts/a.jsonl', 107, 'y\n'));
  assert.equal(o.health.failed, 2, 'the next record past the backoff tried again');
  assert.match(o.errors[1] ?? '', /tried again by the append that takes the log past \d+ bytes$/);
  await o.wal.record(r('transcripts/a.jsonl', 109, 'z\n'));
  assert.deepEqual(o.health, { failed: 2, succeeded: 1 });
  assert.equal(statSync(o.file).size, 0, 'emptied before the record resolved');
  assert.deepEqual(synced, ['transcripts/a.jsonl']);
  assert.equal(o.errors.length, 2, o.errors.join('\n'));
});

test('a failed cut-back is emptied by a checkpoint the next record runs first, after which records are taken again', async (t) => {
  let failWrite = false;
  let failCut = false;
  const io = withIo({
    write: (fh, buf) => (failWrite ? Promise.reject(errno('ENOSPC')) : nodeIo.write(fh, buf)),
    truncate: (fh, len) => (failCut ? Promise.reject(errno('EIO', 'ftruncate')) : nodeIo.truncate(fh, len)),
  });
  const o = await open(io);
  t.after(() => o.wal.close());
  failWrite = true;
  failCut = true;
  await assert.rejects(() => o.wal.record(r('transcripts/a.jsonl', 0, 'a\n')), { code: 'ENOSPC' });
  failWrite = false;
  failCut = false;
  await o.wal.record(r('transcripts/a.jsonl', 0, 'a\n'));
  assert.equal(o.health.succeeded, 1, 'the record ran the checkpoint first');
  assert.deepEqual(scanWal(readFileSync(o.file)).records.map((x) => x.d), ['a\n']);
});

test('a close writes nothing: the records stay for the next start, and no sync is tried', async () => {
  let syncs = 0;
  const o = await open(nodeIo, { syncFile: async () => void syncs++ });
  await o.wal.record(r('transcripts/a.jsonl', 0, 'a\n'));
  const size = statSync(o.file).size;
  assert.ok(size > 0);
  await o.wal.close();
  assert.equal(statSync(o.file).size, size);
  assert.equal(syncs, 0);
  assert.deepEqual(o.errors, []);
});

test('settled() waits for the records queued; a log exactly at its bound is not checkpointed', async (t) => {
  const one = r('transcripts/a.jsonl', 0, 'a\n');
  const json = JSON.stringify(one);
  const o = await open(nodeIo, { checkpointBytes: Buffer.byteLength(sealLine(json)) });
  t.after(() => o.wal.close());
  void o.wal.record(one);
  await o.wal.settled();
  assert.equal(scanWal(readFileSync(o.file)).records.length, 1);
  assert.deepEqual(o.health, { failed: 0, succeeded: 0 }, 'at the bound, not past it');
});

test('a close gives back the log\'s descriptor; a close of it that fails is logged', async () => {
  const fds = readdirSync('/proc/self/fd').length;
  for (let n = 0; n < 10; n++) {
    const o = await open();
    await o.wal.record(r('transcripts/a.jsonl', 0, 'a\n'));
    await o.wal.close();
  }
  assert.ok(readdirSync('/proc/self/fd').length < fds + 5, 'ten logs opened and closed leak nothing');
  const closeFails = closeFailsIo();
  const o = await open(closeFails);
  await o.wal.close();
  assert.deepEqual(o.errors, [`closing ${WAL_REL} failed`]);
});
