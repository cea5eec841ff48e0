// The write-ahead log behind --durability sync: what a crash loses from the unsynced Go-format
// files is put back from it at the next open, exactly once, and never onto a file replaced since.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { withIo } from '../../src/store/io.js';
import { Store } from '../../src/store/store.js';
import { scanWal, WAL_REL } from '../../src/store/wal-record.js';
import { errno, newSession, storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { sealLine } from '../../src/store/sealed-line.js';

const entry = (ts: string, text = ts) => ({ ts, role: 'user', text });
const line = (ts: string) => `{"ts":"${ts}","role":"user","text":"${ts}"}\n`;

/** A store that "crashes": it is never closed, so its log is never checkpointed. */
async function crashedAfter(dir: string, ops: (s: Store) => Promise<void>): Promise<void> {
  const s = await Store.open(statePathIn(dir), { lock: false });
  await s.addSession(newSession('s'));
  await ops(s);
}

test('appends lost from the transcript after a crash are put back from the log at the next open', async () => {
  const dir = tempDir();
  await crashedAfter(dir, async (s) => {
    for (const ts of ['t1', 't2', 't3']) await s.appendTranscript('s', entry(ts));
    for (const u of ['u0', 'u1']) await s.appendParticipant('s', u);
  });
  const transcript = path.join(dir, 'transcripts/s.jsonl');
  const journal = path.join(dir, 'participants/s.log');
  // What a power loss does to data that was written but not synced: it is not there. A file's
  // first append (t1, u0) is fdatasynced in the file itself: it stays.
  truncateSync(transcript, line('t1').length + 10); // t1 whole, t2 torn
  truncateSync(journal, 'u0\n'.length);
  const warnings: string[] = [];
  const store = await Store.open(statePathIn(dir), { warn: (m) => warnings.push(m) });
  try {
    assert.equal(readFileSync(transcript, 'utf8'), line('t1') + line('t2') + line('t3'));
    assert.equal(readFileSync(journal, 'utf8'), 'u0\nu1\n');
    assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1', 't2', 't3']);
    assert.ok(warnings.some((w) => /put back/.test(w)), warnings.join('\n'));
    assert.equal(statSync(path.join(dir, WAL_REL)).size, 0, 'the log is emptied after the replay');
  } finally {
    await store.close();
  }
});

test('a replay writes nothing twice: records whose bytes are already in the file are skipped', async () => {
  const dir = tempDir();
  await crashedAfter(dir, async (s) => {
    for (const ts of ['t1', 't2']) await s.appendTranscript('s', entry(ts));
  });
  const before = readFileSync(path.join(dir, 'transcripts/s.jsonl'), 'utf8');
  const store = await Store.open(statePathIn(dir));
  await store.close();
  assert.equal(readFileSync(path.join(dir, 'transcripts/s.jsonl'), 'utf8'), before);
  assert.equal(before, line('t1') + line('t2'));
});

test('a record about a file replaced since (another inode) is not applied to the new file', async () => {
  const dir = tempDir();
  await crashedAfter(dir, async (s) => {
    await s.appendTranscript('s', entry('t1'));
  });
  const file = path.join(dir, 'transcripts/s.jsonl');
  const replacement = `${file}.new`;
  writeFileSync(replacement, '');
  const { renameSync } = await import('node:fs');
  renameSync(replacement, file); // same name, new inode, empty: as after a compaction or a re-creation
  const store = await Store.open(statePathIn(dir));
  await store.close();
  assert.equal(readFileSync(file, 'utf8'), '');
});

test('a torn last record of the log (a crash while writing it) is ignored, the records before it applied', async () => {
  const dir = tempDir();
  await crashedAfter(dir, async (s) => {
    for (const ts of ['t1', 't2']) await s.appendTranscript('s', entry(ts));
  });
  const walFile = path.join(dir, WAL_REL);
  const wal = readFileSync(walFile);
  assert.equal(scanWal(wal).records.length, 2);
  writeFileSync(walFile, Buffer.concat([wal, Buffer.from('deadbeef {"f":"transcripts/s.jsonl","i":1,')]));
  truncateSync(path.join(dir, 'transcripts/s.jsonl'), line('t1').length); // the first append is synced in the file
  const store = await Store.open(statePathIn(dir));
  await store.close();
  assert.equal(readFileSync(path.join(dir, 'transcripts/s.jsonl'), 'utf8'), line('t1') + line('t2'));
});

test('a record whose checksum does not match is skipped, and the valid record after it is still read', () => {
  const good = '{"f":"transcripts/s.jsonl","i":1,"o":0,"d":"x\\n"}';
  const scan = scanWal(Buffer.from(`00000000 ${good}\n${sealLine(good)}`));
  assert.equal(scan.records.length, 1);
  assert.deepEqual(scan.damaged, [{ line: 1, why: 'checksum mismatch' }]);
});

test('a clean close writes nothing: the log keeps its records, and the next start replays and empties it', async () => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir));
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', entry('t1'));
  const recorded = statSync(path.join(dir, WAL_REL)).size;
  assert.ok(recorded > 0, 'the append was recorded');
  await store.close();
  assert.equal(statSync(path.join(dir, WAL_REL)).size, recorded, 'close left the records');
  const again = await Store.open(statePathIn(dir));
  assert.equal(statSync(path.join(dir, WAL_REL)).size, 0, 'the start replayed and emptied the log');
  assert.deepEqual((await again.readTranscript('s', 0)).map((e) => e.ts), ['t1']);
  await again.close();
});

test('--durability write keeps no log', async () => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir), { durability: 'write' });
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', entry('t1'));
  await store.close();
  assert.equal(existsSync(path.join(dir, WAL_REL)), false);
});

test('when the log cannot be synced, the append fails and leaves the transcript as it was', async (t) => {
  const dir = tempDir();
  let fail = false;
  const io = withIo({
    datasync: async (fh) => {
      if (fail) throw errno('EIO', 'fdatasync');
      await fh.datasync();
    },
  });
  const store = await Store.open(statePathIn(dir), { io });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', entry('t1'));
  fail = true;
  await assert.rejects(() => store.appendTranscript('s', entry('t2')), storeError('io', ['wal.log', 'EIO'], 'EIO'));
  fail = false;
  assert.equal(readFileSync(path.join(dir, 'transcripts/s.jsonl'), 'utf8'), line('t1'));
  assert.equal(await store.appendTranscript('s', entry('t3')), 1, 'the failed append took no seq');
  assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1', 't3']);
});

test('a compaction checkpoints first, so no record of the old file survives it', async () => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir));
  await store.addSession(newSession('s'));
  const big = 'x'.repeat(1024 * 1024);
  for (let i = 0; i < 5; i++) await store.appendTranscript('s', entry(`t${i}`, big));
  const records = scanWal(readFileSync(path.join(dir, WAL_REL))).records;
  const ino = statSync(path.join(dir, 'transcripts/s.jsonl')).ino;
  assert.ok(records.every((r) => r.i === ino), 'every record left is about the compacted file');
  await store.close();
});

test('appends to many files keep being answered while the log is checkpointed under them', async () => {
  const dir = tempDir();
  // A tiny bound: the log is checkpointed again and again while appends to 16 files are in flight.
  const store = await Store.open(statePathIn(dir), { walCheckpointBytes: 2048 });
  try {
    const names = Array.from({ length: 16 }, (_, i) => `s${i}`);
    for (const n of names) await store.addSession(newSession(n));
    const rounds = 40;
    await Promise.all(names.map(async (n) => {
      for (let i = 0; i < rounds; i++) await store.appendTranscript(n, entry(`t${i}`));
    }));
    // The last batch may have started a checkpoint in the background; the log's size is only
    // defined once it is done. A record queued now waits for it, so once this append is answered
    // the checkpoint has finished and the log holds at most what came after it.
    await store.appendTranscript('s0', entry('after'));
    for (const n of names) {
      const expected = Array.from({ length: rounds }, (_, i) => `t${i}`);
      assert.deepEqual((await store.readTranscript(n, 0)).map((e) => e.ts), n === 's0' ? [...expected, 'after'] : expected, n);
    }
    await store.flush(); // a checkpoint the last batch started is part of what flush waits for
    assert.ok(statSync(path.join(dir, WAL_REL)).size <= 2048, 'the log was checkpointed, not left to grow');
  } finally {
    await store.close();
  }
});

test('a close after refuseWrites (a shutdown) still releases the lock', async () => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir));
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', entry('t1'));
  store.refuseWrites();
  await assert.rejects(() => store.appendTranscript('s', entry('t2')), storeError('closed'));
  await store.close();
  const again = await Store.open(statePathIn(dir)); // the lock was released
  await again.close();
});
