// Storage health as `status` reports it: the last storage error and when, a failing checkpoint,
// and the one-minute window after which an old error no longer makes the server unhealthy.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RECENT_ERROR_MS, StorageHealth } from '../../src/store/health.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { errno, newSession, openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

test('a fresh tracker is healthy with no storage error', () => {
  assert.deepEqual(new StorageHealth().snapshot(1000), { lastStorageError: null, checkpointFailing: false, healthy: true });
});

test('a storage error is unhealthy for one minute, then healthy again while still reported', () => {
  const h = new StorageHealth();
  h.recordError('compaction of transcripts/s.jsonl failed', errno('ENOSPC'), 10_000);
  const during = h.snapshot(10_000 + RECENT_ERROR_MS - 1);
  assert.equal(during.healthy, false);
  assert.equal(during.lastStorageError?.code, 'ENOSPC');
  assert.equal(during.lastStorageError?.at, 10_000);
  assert.ok(during.lastStorageError?.message.startsWith('compaction of transcripts/s.jsonl failed: ENOSPC'), during.lastStorageError?.message);
  const after = h.snapshot(10_000 + RECENT_ERROR_MS);
  assert.equal(after.healthy, true);
  assert.deepEqual(after.lastStorageError, during.lastStorageError);
});

test('a failing checkpoint is unhealthy until a checkpoint succeeds, however old the error', () => {
  const h = new StorageHealth();
  h.checkpointFailed(errno('EIO', 'fsync'), 0);
  const later = h.snapshot(10 * RECENT_ERROR_MS);
  assert.equal(later.checkpointFailing, true);
  assert.equal(later.healthy, false);
  assert.equal(later.lastStorageError?.code, 'EIO');
  h.checkpointSucceeded();
  assert.equal(h.snapshot(10 * RECENT_ERROR_MS).healthy, true);
  assert.equal(h.snapshot(10 * RECENT_ERROR_MS).checkpointFailing, false);
});

test('an error without an errno code is recorded without one', () => {
  const h = new StorageHealth();
  h.recordError('', 'plain', 5);
  assert.deepEqual(h.snapshot(5).lastStorageError, { message: 'plain', at: 5 });
});

test('a warning the store reports with an error (a failed compaction) reaches store.health', { timeout: 30_000 }, async (t) => {
  let failures = 1;
  const io = withIo({
    rename: async (from, to) => {
      if (from.endsWith('.compact') && failures-- > 0) throw errno('EIO', 'rename');
      return nodeIo.rename(from, to);
    },
  });
  const warned: string[] = [];
  const store = await openIn(tempDir(), { durability: 'write', io, warn: (m) => warned.push(m) });
  t.after(() => store.close());
  assert.equal(store.health.snapshot().healthy, true);
  await store.addSession(newSession('s'));
  const text = 'x'.repeat(300 * 1024);
  for (let i = 0; warned.length === 0; i++) await store.appendTranscript('s', { ts: `t${i}`, role: 'user', text });
  const snap = store.health.snapshot();
  assert.equal(snap.healthy, false);
  assert.equal(snap.lastStorageError?.code, 'EIO');
  assert.ok(snap.lastStorageError?.message.includes('compaction of transcripts/s.jsonl failed'), snap.lastStorageError?.message);
});
