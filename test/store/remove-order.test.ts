// A removal keeps its place among the writes made before it: one connection's writes are applied
// in the order they arrived (src/server/order-handler.ts lets writes behind writes run at once and
// relies on the store's queues for that order). An append to a transcript or journal not loaded
// yet is queued only after its load; a removal made next must not overtake it.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
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
