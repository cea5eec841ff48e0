// Checkpoint failures of the write-ahead log are never silent: logged at error, reported to the
// storage health, tried again by a later append (a backoff in bytes, no timer: nothing is written
// after the calls returned); appends keep their durability meanwhile (the log keeps
// their records), and a compaction that needed the checkpoint is skipped with an error logged.
import assert from 'node:assert/strict';
import { readFileSync, statSync, truncateSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo, withIo } from '../../src/store/io.js';
import { Store } from '../../src/store/store.js';
import { StorageHealth } from '../../src/store/health.js';
import { COMPACT_TRIGGER_BYTES } from '../../src/store/transcript-compact.js';
import { storeLog } from '../../src/store/store-log.js';
import { SYNCS_AT_ONCE, WriteAheadLog } from '../../src/store/wal.js';
import { scanWal, WAL_REL } from '../../src/store/wal-record.js';
import { errno, newSession } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const entry = (ts: string, text = ts) => ({ ts, role: 'user', text });

/** An Io whose fdatasync of files matching `failing` throws EIO while `on()` is true. */
function failingSyncOf(failing: RegExp) {
  const names = new WeakMap<FileHandle, string>();
  let on = false;
  const io = withIo({
    open: async (file, flags, mode) => {
      const fh = await fs.open(file, flags, mode);
      names.set(fh, file);
      return fh;
    },
    datasync: async (fh) => {
      if (on && failing.test(names.get(fh) ?? '')) throw errno('EIO', 'fdatasync');
      await fh.datasync();
    },
  });
  return { io, fail: (v: boolean) => (on = v) };
}

/** A health tracker that also lets a test await the next successful checkpoint. */
class WatchedHealth extends StorageHealth {
  failures = 0;
  private succeeded: () => void = () => undefined;

  override checkpointFailed(err: unknown, now?: number): void {
    this.failures++;
    super.checkpointFailed(err, now);
  }

  override checkpointSucceeded(): void {
    super.checkpointSucceeded();
    this.succeeded();
  }

  nextSuccess(): Promise<void> {
    return new Promise<void>((r) => (this.succeeded = r));
  }
}

test('a checkpoint that fails is logged at error, reported, and tried again by a later append, inside its call; appends stay durable in the log', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  const { io, fail } = failingSyncOf(/transcripts\/s\.jsonl$/);
  const h = new WatchedHealth();
  const logged: string[] = [];
  const store = await Store.open(statePathIn(dir), { io, health: h, walCheckpointBytes: 1024, error: (m) => logged.push(m) });
  try {
    await store.addSession(newSession('s'));
    // A file's first append is fdatasynced in the file itself: made before the syncs fail.
    await store.appendTranscript('s', entry('first'));
    fail(true);
    for (let i = 0; i < 20; i++) await store.appendTranscript('s', entry(`t${i}`, 'x'.repeat(100)));
    assert.ok(h.failures >= 1, 'the health heard of the failed checkpoint');
    assert.ok(h.failures < 20, `not one attempt per append (${h.failures})`);
    assert.equal(store.health.snapshot().checkpointFailing, true);
    assert.ok(logged.some((m) => /checkpoint of .*wal\.log failed; appends stay durable/.test(m)), logged.join('\n'));
    const records = scanWal(readFileSync(path.join(dir, WAL_REL))).records;
    assert.equal(records.filter((r) => r.d !== '').length, 20, 'every append is still recorded in the log');
    let recovered = false;
    void h.nextSuccess().then(() => (recovered = true));
    fail(false);
    // Bounded: the backoff grows to the bound at most, so a few KiB more appends try again.
    for (let i = 0; i < 200 && !recovered; i++) {
      await store.appendTranscript('s', entry(`u${i}`, 'x'.repeat(100)));
      await Promise.resolve(); // the success listener's turn
    }
    assert.ok(recovered, 'a later append ran the checkpoint');
    assert.equal(statSync(path.join(dir, WAL_REL)).size, 0, 'the append that ran it returned once the log was emptied');
    assert.equal(store.health.snapshot().checkpointFailing, false);
  } finally {
    fail(false);
    await store.close();
  }
});

test('close writes nothing, also with a disk that fails syncs: the log keeps its records, and the next start replays them', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  const { io, fail } = failingSyncOf(/transcripts\/s\.jsonl$/);
  const logged: string[] = [];
  const store = await Store.open(statePathIn(dir), { io, error: (m) => logged.push(m) });
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', entry('t0')); // a file's first append is durable in the file itself
  await store.appendTranscript('s', entry('t1'));
  fail(true);
  await store.close();
  assert.deepEqual(logged, [], 'close tried no checkpoint');
  assert.deepEqual(scanWal(readFileSync(path.join(dir, WAL_REL))).records.map((r) => r.d), ['', `${JSON.stringify(entry('t1'))}\n`]);
  truncateSync(path.join(dir, 'transcripts/s.jsonl'), `${JSON.stringify(entry('t0'))}\n`.length); // as if the unsynced write was lost
  const again = await Store.open(statePathIn(dir));
  try {
    assert.deepEqual((await again.readTranscript('s', 0)).map((e) => e.ts), ['t0', 't1']);
  } finally {
    await again.close();
  }
});

test(`a checkpoint after writes to many files syncs at most ${SYNCS_AT_ONCE} of them at once`, { timeout: 120_000 }, async () => {
  // Each sync opens its file: all at once, a few hundred sessions' files passed a low limit on
  // open files (ulimit -n 256, test/e2e/fd-limit.test.ts) and every checkpoint failed with EMFILE.
  const dir = tempDir();
  const files = Array.from({ length: 4 * SYNCS_AT_ONCE + 3 }, (_, i) => `transcripts/s${i}.jsonl`);
  let syncing = 0;
  let most = 0;
  const synced: string[] = [];
  const errors: string[] = [];
  const wal = await WriteAheadLog.open(nodeIo, dir, {
    syncFile: async (rel) => {
      most = Math.max(most, ++syncing);
      await new Promise((r) => setTimeout(r, 1)); // a sync takes a while: the next ones start meanwhile
      synced.push(rel);
      syncing--;
    },
    log: storeLog({ error: (m) => errors.push(m) }),
    beforeEmpty: async () => undefined,
  });
  await Promise.all(files.map((f, i) => wal.record({ f, i: i + 1, o: 0, d: 'x\n' })));
  await wal.checkpoint();
  await wal.close();
  assert.deepEqual(errors, []);
  assert.deepEqual([...synced].sort(), [...files].sort(), 'every file written was synced once');
  assert.ok(most <= SYNCS_AT_ONCE, `${most} syncs at once`);
  assert.equal(readFileSync(path.join(dir, WAL_REL), 'utf8'), '', 'the log was emptied');
});

test('a compaction skipped because its checkpoint failed is logged, and runs after a later append once it can', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  const { io, fail } = failingSyncOf(/participants\/s\.log$/);
  const logged: string[] = [];
  const store = await Store.open(statePathIn(dir), { io, error: (m, e) => logged.push(`${m} ${String(e)}`) });
  try {
    await store.addSession(newSession('s'));
    // A dirty file whose sync fails blocks every checkpoint (a file's first append is synced at once: the second makes it dirty).
    for (const u of ['u0', 'u1']) await store.appendParticipant('s', u);
    fail(true);
    const big = 'x'.repeat(512 * 1024);
    const file = path.join(dir, 'transcripts/s.jsonl');
    // Bounded: a store that compacted anyway (the bug this test catches) must fail, not loop.
    const most = Math.ceil(COMPACT_TRIGGER_BYTES / big.length) * 2 + 2;
    for (let i = 0; i < most && (statSync(file, { throwIfNoEntry: false })?.size ?? 0) <= COMPACT_TRIGGER_BYTES; i++) {
      await store.appendTranscript('s', entry(`t${i}`, big));
    }
    assert.ok(statSync(file).size > COMPACT_TRIGGER_BYTES, 'not compacted while the checkpoint fails');
    assert.ok(logged.some((m) => /compaction of transcripts\/s\.jsonl skipped: the write-ahead log could not be checkpointed/.test(m)), logged.join('\n'));
    fail(false);
    await store.appendTranscript('s', entry('after', 'y'));
    assert.ok(statSync(file).size <= COMPACT_TRIGGER_BYTES / 2 + 1024, `compacted after the next append: ${statSync(file).size} ${logged.join('\n')}`);
  } finally {
    fail(false);
    await store.close();
  }
});

test('a removal whose checkpoint fails is refused with the error, and the file stays', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  const { io, fail } = failingSyncOf(/participants\/s\.log$/);
  const store = await Store.open(statePathIn(dir), { io });
  try {
    await store.addSession(newSession('s'));
    for (const u of ['u0', 'u1']) await store.appendParticipant('s', u); // the second is a record: the file is dirty
    await store.appendTranscript('s', entry('t1'));
    fail(true);
    await assert.rejects(() => store.removeTranscript('s'), (err: Error) => /checkpoint .*wal\.log: EIO/.test(err.message));
    assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1']);
  } finally {
    fail(false);
    await store.close();
  }
});

test('a checkpoint whose sync fails after the log was emptied leaves no room behind a refused record: the refused append is not replayed', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  const { io, fail } = failingSyncOf(/wal\.log$/);
  let store = await Store.open(statePathIn(dir), { io });
  try {
    await store.addSession(newSession('s'));
    for (const ts of ['t0', 't1', 't2', 't3']) await store.appendTranscript('s', entry(ts));
    // The log, longer than the record refused below: cut back to its old size, it would keep that record whole.
    assert.ok(statSync(path.join(dir, WAL_REL)).size > 400, 'the appends left their records');
    fail(true);
    // The removal checkpoints first: the log is cut to 0, then its sync fails.
    await assert.rejects(() => store.removeParticipants('s'), /checkpoint .*wal\.log: EIO/);
    // This append's record is written (at 0) and its sync fails: it is refused and cut back.
    await assert.rejects(() => store.appendTranscript('s', entry('refused')), /write-ahead record failed/);
    fail(false);
    assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t0', 't1', 't2', 't3'], 'in memory');
    assert.deepEqual(scanWal(readFileSync(path.join(dir, WAL_REL))).records.map((r) => r.d), [], 'no record of the refused append in the log');
    await store.close();
    store = await Store.open(statePathIn(dir), { io });
    assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t0', 't1', 't2', 't3'], 'after a reopen');
  } finally {
    fail(false);
    await store.close();
  }
});
