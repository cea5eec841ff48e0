// A removal keeps its place among the writes made before it: one connection's writes are applied
// in the order they arrived (src/server/order-handler.ts lets writes behind writes run at once and
// relies on the store's queues for that order). An append to a transcript or journal not loaded
// yet is queued only after its load; a removal made next must not overtake it.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Store } from '../../src/store/store.js';
import { errno, newSession, openIn, reopen, storeError, text } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const entry = (ts: string): { ts: string; role: string; text: string } => ({ ts, role: 'user', text: ts });

/** A store whose session a has one entry (t0), reopened so that nothing of a is loaded; closed when the test ends. */
async function unloaded(t: TestContext): Promise<{ dir: string; store: Store }> {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  await store.appendTranscript('a', entry('t0'));
  store = await reopen(store);
  return { dir, store };
}

test('append, remove, append on a transcript not loaded yet: the file holds only the append after the removal', async (t) => {
  const { dir, store } = await unloaded(t);
  const first = store.appendTranscript('a', entry('t1'));
  const removed = store.removeTranscript('a');
  const second = store.appendTranscript('a', entry('t2'));
  assert.deepEqual(await Promise.all([first, removed, second]), [1, true, 0]);
  assert.deepEqual((await store.readTranscript('a')).map((e) => e.ts), ['t2']);
  assert.equal(text(path.join(dir, 'transcripts', 'a.jsonl')).trim().split('\n').length, 1);
});

test('append then remove on a transcript never read: the removal finds the file the append made', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  const appended = store.appendTranscript('a', entry('t1'));
  const removed = store.removeTranscript('a');
  assert.deepEqual(await Promise.all([appended, removed]), [0, true]);
  assert.equal(existsSync(path.join(dir, 'transcripts', 'a.jsonl')), false);
  assert.deepEqual(await store.readTranscript('a'), []);
});

test('participants: append then remove, on a journal not loaded and on one loaded: the id is gone', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  await store.appendParticipant('a', 'u0');
  store = await reopen(store); // the journal is not loaded now
  const added = store.appendParticipant('a', 'u1');
  const removed = store.removeParticipants('a');
  assert.deepEqual(await Promise.all([added, removed]), [true, true]);
  assert.deepEqual(await store.readParticipants('a'), []);
  // Loaded (the read above): the same in one turn.
  const again = store.appendParticipant('a', 'u2');
  const removedAgain = store.removeParticipants('a');
  assert.deepEqual(await Promise.all([again, removedAgain]), [true, true]);
  assert.deepEqual(await store.readParticipants('a'), []);
  store = await reopen(store);
  assert.deepEqual(await store.readParticipants('a'), [], 'nor on disk');
});

test('session/remove with purge, then an append in the same turn: the purge does not delete the later append', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  await store.appendTranscript('a', entry('t0'));
  await store.appendParticipant('a', 'u0');
  const removed = store.removeSession('a', { purge: true });
  const appended = store.appendTranscript('a', entry('t1'), { requireSession: false });
  const added = store.appendParticipant('a', 'u1', { requireSession: false });
  assert.deepEqual(await Promise.all([removed, appended, added]), [{ removed: true }, 0, true]);
  assert.deepEqual((await store.readTranscript('a')).map((e) => e.ts), ['t1']);
  assert.deepEqual(await store.readParticipants('a'), ['u1']);
});

test('session/remove with purge refused by its guard removes no file, and keeps its place', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  await store.appendTranscript('a', entry('t0'));
  await assert.rejects(store.removeSession('a', { purge: true, incarnation: 'inc_wrong' }));
  assert.deepEqual((await store.readTranscript('a')).map((e) => e.ts), ['t0']);
});

test('remove then append on a transcript not loaded: the append counts from the removal, not the old file', async (t) => {
  const { store } = await unloaded(t);
  const removed = store.removeTranscript('a');
  const appended = store.appendTranscript('a', entry('t1'));
  assert.deepEqual(await Promise.all([removed, appended]), [true, 0]);
  assert.deepEqual((await store.readTranscript('a')).map((e) => e.ts), ['t1']);
});

/** A new store, then session/add of a, a transcript append and a participants append in the same turn, none awaited. */
async function addWithAppends(t: TestContext): Promise<{ dir: string; store: Store; added: Promise<unknown>; appended: Promise<number>; joined: Promise<boolean> }> {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  const added = store.addSession(newSession('a'));
  return { dir, store, added, appended: store.appendTranscript('a', entry('t1')), joined: store.appendParticipant('a', 'u1') };
}

test('session/add, append, remove in one turn: the removal waits for the append that waits for the row', async (t) => {
  const { dir, store, added, appended, joined } = await addWithAppends(t);
  const removed = store.removeTranscript('a');
  const gone = store.removeParticipants('a');
  await added;
  assert.deepEqual(await Promise.all([appended, joined, removed, gone]), [0, true, true, true]);
  assert.equal(existsSync(path.join(dir, 'transcripts', 'a.jsonl')), false);
  assert.deepEqual(await store.readParticipants('a'), []);
});

test('participants: append u, remove, append u in one turn: the second append adds u again, loaded or not', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  await store.appendParticipant('a', 'u0');
  for (const loaded of [true, false]) {
    if (loaded) await store.readParticipants('a');
    else store = await reopen(store);
    const [u, v] = loaded ? ['u1', 'u2'] : ['u3', 'u4'];
    const first = store.appendParticipant('a', u);
    const removed = store.removeParticipants('a');
    const again = store.appendParticipant('a', u);
    const other = store.appendParticipant('a', v);
    assert.deepEqual(await Promise.all([first, removed, again, other]), [true, true, true, true], loaded ? 'loaded' : 'not loaded');
    assert.deepEqual(await store.readParticipants('a'), [u, v]);
    assert.equal(text(path.join(dir, 'participants', 'a.log')), `${u}\n${v}\n`);
  }
});

test('session/add, appends, session/remove in one turn: the removal called after the appends does not refuse them', async (t) => {
  const { store, added, appended, joined } = await addWithAppends(t);
  const removed = store.removeSession('a');
  const [, ...answers] = await Promise.all([added, appended, joined, removed]);
  assert.deepEqual(answers, [0, true, { removed: true }]);
  // Without purge the files stay, as one at a time.
  assert.deepEqual((await store.readTranscript('a')).map((e) => e.ts), ['t1']);
  assert.deepEqual(await store.readParticipants('a'), ['u1']);
});

test('session/add whose write fails: the appends waiting for its row are refused and write no file', async (t) => {
  const dir = tempDir();
  let failing = true;
  const store = await openIn(dir, {
    io: withIo({ writeAtomic: (file, data, opts) => (failing && file.endsWith('state.json') ? Promise.reject(errno('ENOSPC')) : nodeIo.writeAtomic(file, data, opts)) }),
  });
  t.after(() => store.close());
  const added = store.addSession(newSession('a'));
  const appended = store.appendTranscript('a', entry('t1'));
  const joined = store.appendParticipant('a', 'u1');
  await assert.rejects(added, storeError('io'));
  await assert.rejects(appended, storeError('unknown-session'));
  await assert.rejects(joined, storeError('unknown-session'));
  assert.equal(existsSync(path.join(dir, 'transcripts', 'a.jsonl')), false);
  assert.equal(existsSync(path.join(dir, 'participants', 'a.log')), false);
  failing = false;
  await store.addSession(newSession('a'));
  assert.equal(await store.appendTranscript('a', entry('t2')), 0, 'the seq starts at 0: nothing was written before');
});

/**
 * A store in a fresh dir whose state.json rewrites fail with ENOSPC while `fail.on` is set;
 * `writing()` resolves once the next rewrite has begun (its commit is under way).
 */
/** A store in `dir` whose next fdatasync fails with EIO once `failNextSync()` is called (one only). */
async function failingOneSync(t: TestContext, dir: string): Promise<{ store: Store; failNextSync: () => void }> {
  let failSync = false;
  const store = await openIn(dir, {
    io: withIo({
      datasync: (fh) => {
        if (!failSync) return nodeIo.datasync(fh);
        failSync = false;
        return Promise.reject(errno('EIO', 'fsync'));
      },
    }),
  });
  t.after(() => store.close());
  return { store, failNextSync: () => void (failSync = true) };
}

async function failingState(t: TestContext): Promise<{ store: Store; fail: { on: boolean }; writing: () => Promise<void>; reopened: () => Promise<Store> }> {
  const dir = tempDir();
  const fail = { on: false };
  let begun: (() => void) | undefined;
  const options = {
    io: withIo({
      writeAtomic: async (file, data, opts) => {
        begun?.();
        await new Promise((resolve) => setImmediate(resolve));
        if (fail.on && file.endsWith('state.json')) throw errno('ENOSPC');
        return nodeIo.writeAtomic(file, data, opts);
      },
    }),
  };
  let store = await openIn(dir, options);
  t.after(() => store.close());
  const reopened = async (): Promise<Store> => (store = await reopen(store, options));
  return { store, fail, writing: () => new Promise<void>((resolve) => (begun = resolve)), reopened };
}

test('session/remove whose write fails, then appends in the same turn: they find the row that stayed, as one at a time', async (t) => {
  const { store, fail } = await failingState(t);
  await store.addSession(newSession('a'));
  fail.on = true;
  const removed = store.removeSession('a');
  const appended = store.appendTranscript('a', entry('t1'));
  const joined = store.appendParticipant('a', 'u1');
  await assert.rejects(removed, storeError('io'));
  fail.on = false;
  // Decided against the document with the removal applied, they were refused -32011.
  assert.deepEqual(await Promise.all([appended, joined]), [0, true]);
  assert.equal(store.findSession('a')?.name, 'a');
  assert.deepEqual((await store.readTranscript('a')).map((e) => e.ts), ['t1']);
});

test('session/add whose write fails, then the same add in the same turn: the second is added, as one at a time', async (t) => {
  const { store, fail, writing } = await failingState(t);
  fail.on = true;
  const begun = writing();
  const first = store.addSession(newSession('a'));
  // Called while the first's commit runs (a request a moment behind it), so it is in the next
  // commit, which succeeds.
  await begun;
  const second = store.addSession(newSession('a'));
  void first.catch(() => (fail.on = false));
  await assert.rejects(first, storeError('io'));
  // Refused at once against the first add's row ("exists"), it never got its turn.
  assert.equal((await second).name, 'a');
  assert.equal(store.findSession('a')?.name, 'a');
});

test('participants: u1 whose write fails, u1 again and u2 in the same turn: the journal holds u1 then u2, as one at a time', async (t) => {
  const dir = tempDir();
  let failNext = false;
  const journals = new WeakSet<FileHandle>();
  const store = await openIn(dir, {
    io: withIo({
      open: async (file, flags, mode) => {
        const fh = await nodeIo.open(file, flags, mode);
        if (file.endsWith('.log')) journals.add(fh);
        return fh;
      },
      write: (fh, buf) => {
        if (journals.has(fh) && failNext) {
          failNext = false;
          return Promise.reject(errno('ENOSPC'));
        }
        return nodeIo.write(fh, buf);
      },
    }),
  });
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  await store.appendParticipant('a', 'u0');
  failNext = true;
  const answers = await Promise.allSettled([store.appendParticipant('a', 'u1'), store.appendParticipant('a', 'u1'), store.appendParticipant('a', 'u2')]);
  assert.deepEqual(answers.map((a) => (a.status === 'fulfilled' ? a.value : 'refused')), ['refused', true, true]);
  // The second u1 once waited for the first's answer and only then queued, behind u2.
  assert.deepEqual(await store.readParticipants('a'), ['u0', 'u1', 'u2']);
  assert.equal(text(path.join(dir, 'participants', 'a.log')), 'u0\nu1\nu2\n');
});

test('session/remove with purge whose write fails, participants/append, participants/remove in one turn: the removal removes the append, as one at a time', async (t) => {
  const { store, fail, reopened: reopen } = await failingState(t);
  await store.addSession(newSession('a'));
  await store.appendParticipant('a', 'u0');
  const reopened = await reopen(); // the journal is not loaded: the append loads it first
  fail.on = true;
  const removed = reopened.removeSession('a', { purge: true });
  const joined = reopened.appendParticipant('a', 'u1');
  const gone = reopened.removeParticipants('a');
  const answers = await Promise.allSettled([removed, joined, gone]);
  assert.deepEqual(answers.map((a) => (a.status === 'fulfilled' ? a.value : 'refused')), ['refused', true, true]);
  assert.deepEqual(await reopened.readParticipants('a'), []);
});

test('session/remove with purge whose file removal fails: the error says the row was removed and how to finish; purging again does', async (t) => {
  const dir = tempDir();
  const { store, failNextSync } = await failingOneSync(t, dir);
  await store.addSession(newSession('a'));
  await store.appendTranscript('a', entry('t0'));
  failNextSync(); // the checkpoint before the transcript's removal
  await assert.rejects(store.removeSession('a', { purge: true }), storeError('io', ['session "a" was removed, but not all of its files', 'purge again'], 'EIO'));
  assert.equal(store.findSession('a'), null, 'the row is gone, as the error says');
  assert.ok(existsSync(path.join(dir, 'transcripts', 'a.jsonl')), 'the transcript is left');
  assert.deepEqual(await store.removeSession('a', { purge: true }), { removed: false });
  assert.equal(existsSync(path.join(dir, 'transcripts', 'a.jsonl')), false);
});

test('participants/remove that fails, an append, participants/remove in one turn: the second removal removes the append', async (t) => {
  const dir = tempDir();
  const { store, failNextSync } = await failingOneSync(t, dir);
  await store.addSession(newSession('a'));
  failNextSync(); // the checkpoint before the first removal
  const answers = await Promise.allSettled([store.removeParticipants('a'), store.appendParticipant('a', 'u1'), store.removeParticipants('a')]);
  // The second removal waited on the first alone, which failed at once: it ran before the append,
  // deferred behind the first, had its place in the queue (removed:false, u1 left in the journal).
  assert.deepEqual(answers.map((a) => (a.status === 'fulfilled' ? a.value : 'refused')), ['refused', true, true]);
  assert.deepEqual(await store.readParticipants('a'), []);
  assert.equal(existsSync(path.join(dir, 'participants', 'a.log')), false);
});
