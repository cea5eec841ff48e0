// Storage health as `status` reports it: the last storage error and when, a failing checkpoint,
// and the one-minute window after which an old error no longer makes the server unhealthy.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RECENT_ERROR_MS, StorageHealth } from '../../src/store/health.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { storeLog } from '../../src/store/store-log.js';
import type { Store } from '../../src/store/store.js';
import { errno, newSession, openIn, storeError } from '../helpers/store.js';
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

// A refused write has a caller who hears of it, but `status` must say so too: a full disk that
// refuses every append while `status` answers healthy is a disk nobody looks at.
const writes: [string, (s: Store) => Promise<unknown>][] = [
  ['a transcript append', (s) => s.appendTranscript('s', { ts: 't1', role: 'user', text: 'refused' })],
  ['a participant append', (s) => s.appendParticipant('s', 'u1')],
  ['a state.json write', (s) => s.setWorkspace('/ws')],
];
for (const code of ['ENOSPC', 'EIO', 'EMFILE']) {
  for (const [what, write] of writes) {
    test(`${what} refused with ${code} makes store.health unhealthy for a minute, with that code`, async (t) => {
      let armed = false;
      const io = withIo({
        write: (fh, buf) => (armed ? Promise.reject(errno(code, 'write')) : nodeIo.write(fh, buf)),
        open: (file, flags, mode) => (armed ? Promise.reject(errno(code, 'open')) : nodeIo.open(file, flags, mode)),
        writeAtomic: (file, data, opts) => (armed ? Promise.reject(errno(code, 'write')) : nodeIo.writeAtomic(file, data, opts)),
      });
      const store = await openIn(tempDir(), { io, durability: 'write' });
      t.after(() => store.close());
      await store.addSession(newSession('s'));
      await store.appendTranscript('s', { ts: 't0', role: 'user', text: 'fine' });
      assert.equal(store.health.snapshot().healthy, true);
      armed = true;
      await assert.rejects(() => write(store), storeError('io', [], code));
      armed = false;
      const snap = store.health.snapshot();
      assert.equal(snap.healthy, false, 'unhealthy after a refused write');
      assert.equal(snap.lastStorageError?.code, code);
      assert.equal(store.health.snapshot(Date.now() + RECENT_ERROR_MS + 1000).healthy, true, 'healthy again a minute later');
    });
  }
}

test('an error logged without a cause (a state.json that cannot be loaded) is reported once, not repeated after its own colon', () => {
  const h = new StorageHealth();
  const why = 'state.json was changed by another process and cannot be loaded (invalid JSON)';
  storeLog({ health: h }).error(why);
  assert.equal(h.snapshot(0).lastStorageError?.message, why);
});
