// Idempotency keys of the state document's writes: a write sent again with the key of one already
// applied is answered as that one was and not applied again, after a restart too; a crash between
// a key's line and state.json's rename leaves the key unapplied, so the retry applies it.
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, lstatSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { sealLine } from '../../src/store/sealed-line.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { errno, newSession, openIn, reopen, storeError } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const key = (seq: number) => ({ id: 'writer-test-1', seq });
const writersFile = (dir: string) => path.join(dir, '.herrscher-state', 'writers.json');
const keysLog = (dir: string) => path.join(dir, '.herrscher-state', 'state-keys.log');

test('a setter, an add and a save sent again with their keys are answered as they were, also after a restart', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  const added = await store.addSession(newSession('a'), key(1));
  assert.deepEqual(await store.addSession(newSession('a'), key(1)), added, 'the add sent again answers its own row');
  await assert.rejects(() => store.addSession(newSession('a'), key(2)), storeError('exists'));
  assert.deepEqual(await store.setResumeToken('a', 'tok', { writer: key(3) }), { found: true, changed: true });
  // The same token again without the key is no change; with the key it is the first answer.
  assert.deepEqual(await store.setResumeToken('a', 'tok'), { found: true, changed: false });
  assert.deepEqual(await store.setResumeToken('a', 'tok', { writer: key(3) }), { found: true, changed: true });
  const doc = structuredClone(store.getPersistedState());
  doc.workspace = '/w';
  const saved = await store.saveState(doc, store.revision, undefined, key(4));
  assert.equal(saved.changed, true);
  // Its revision is gone by now (a compare-and-set would refuse): the key answers first.
  await store.setResumeToken('a', 'other');
  assert.deepEqual(await store.saveState(doc, saved.revision, undefined, key(4)), { revision: store.revision, changed: true });

  store = await reopen(store);
  assert.deepEqual(await store.addSession(newSession('a'), key(1)), added, 'after a restart');
  assert.deepEqual(await store.setResumeToken('a', 'tok', { writer: key(3) }), { found: true, changed: true });
  assert.equal(store.findSession('a')?.resumeToken, 'other', 'the setter sent again was not applied again');
});

/** The key lines a commit writes before its rename (state-keys.ts), as a crash could leave them at the log's end. */
const commitLines = (c: number, before: unknown, keys: [number, unknown][]): string =>
  keys.map(([seq, answer]) => sealLine(JSON.stringify({ w: 'writer-test-1', q: seq, a: answer, c, b: before }))).join('');

const stampOf = (file: string) => {
  const st = lstatSync(file);
  return { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
};

test('a crash after the key lines were written and before state.json was replaced: the write is not applied, so its retry applies it', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'), key(1));
  await store.setResumeToken('a', 'first', { writer: key(2) });
  const stateFile = store.statePath;
  await store.close();
  // What the crash leaves: the last commit's line (key 3) names state.json's stamp as it is now.
  appendFileSync(keysLog(dir), commitLines(7, stampOf(stateFile), [[3, { found: true, changed: true }]]));
  store = await openIn(dir);
  assert.deepEqual(await store.setResumeToken('a', 'second', { writer: key(3) }), { found: true, changed: true });
  assert.equal(store.findSession('a')?.resumeToken, 'second', 'the retry of a write the crash lost is applied');
  assert.deepEqual(await store.setResumeToken('a', 'first', { writer: key(2) }), { found: true, changed: true });
  assert.equal(store.findSession('a')?.resumeToken, 'second', 'an earlier key is still answered, not applied');
});

test('the last commit\'s lines count when state.json was replaced since (its stamp changed); an earlier commit\'s count whatever the stamp', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'), key(1));
  const now = stampOf(store.statePath);
  await store.close();
  appendFileSync(keysLog(dir), commitLines(8, now, [[2, { found: true, changed: true }]]) + commitLines(9, { ino: 1, size: 2, mtimeMs: 3 }, [[3, { found: true, changed: true }]]));
  store = await openIn(dir);
  assert.deepEqual(await store.setResumeToken('a', 'x', { writer: key(3) }), { found: true, changed: true });
  assert.deepEqual(await store.setResumeToken('a', 'y', { writer: key(2) }), { found: true, changed: true });
  assert.equal(store.findSession('a')?.resumeToken, undefined, 'both recorded writes are answered, not applied');
});

test('a commit whose state.json write failed after its key line: a later commit that lands never makes that key count', async (t) => {
  const dir = tempDir();
  let failState = false;
  const io = withIo({
    writeAtomic: (file, data, opts) => (failState && path.basename(file) === 'state.json' ? Promise.reject(errno('EIO', 'rename')) : nodeIo.writeAtomic(file, data, opts)),
  });
  let store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('a'), key(1));
  failState = true;
  await assert.rejects(() => store.setResumeToken('a', 'lost', { writer: key(2) }), storeError('io', [], 'EIO'));
  failState = false;
  // No key of its own: it still must not leave the failed commit's line as if it had landed.
  await store.setWorkspace('/w');
  store = await reopen(store);
  assert.deepEqual(await store.setResumeToken('a', 'retried', { writer: key(2) }), { found: true, changed: true });
  assert.equal(store.findSession('a')?.resumeToken, 'retried', 'the retry of the failed write is applied');
  assert.equal(store.getState().workspace, '/w');
});

test('a state dir of the previous format (writers.json) is read: its keys count as they did, and it is folded into the log', async (t) => {
  for (const landed of [true, false]) {
    const dir = tempDir();
    let store = await openIn(dir);
    t.after(() => store.close());
    const added = await store.addSession(newSession('a'), key(1));
    const before = landed ? { ino: 1, size: 2, mtimeMs: 3 } : stampOf(store.statePath);
    await store.close();
    rmSync(keysLog(dir));
    // The format earlier builds wrote: the table, and the commit under way with state.json's stamp before it.
    writeFileSync(writersFile(dir), JSON.stringify({ v: 1, before, table: [['writer-test-1', [[1, { session: added }]]]], last: [['writer-test-1', 2, { found: true, changed: true }]] }));
    store = await openIn(dir);
    assert.equal(existsSync(writersFile(dir)), false, 'the previous format is removed once its keys are in the log');
    assert.deepEqual(await store.setResumeToken('a', 'x', { writer: key(2) }), { found: true, changed: true });
    assert.equal(store.findSession('a')?.resumeToken, landed ? undefined : 'x', landed ? 'its last commit landed: answered' : 'its last commit never landed: applied');
    assert.deepEqual(await store.addSession(newSession('a'), key(1)), added, 'a key of its table is answered as recorded, not refused as existing');
    store = await reopen(store);
    assert.deepEqual(await store.setResumeToken('a', 'z', { writer: key(2) }), { found: true, changed: true });
    assert.equal(store.findSession('a')?.resumeToken, landed ? undefined : 'x', 'and still after the next start');
    await store.close();
  }
});

test('in sync mode a key line is on disk (written and fdatasync\'ed) before state.json is replaced', async (t) => {
  const dir = tempDir();
  const order: string[] = [];
  const io = withIo({
    writeSynced: (fh, buf) => {
      order.push(`synced ${buf.toString('utf8').includes('"writer-test-1"') ? 'key' : 'other'}`);
      return nodeIo.writeSynced(fh, buf);
    },
    write: (fh, buf) => {
      if (buf.toString('utf8').includes('"writer-test-1"')) order.push('key unsynced');
      return nodeIo.write(fh, buf);
    },
    writeAtomic: (file, data, opts) => {
      if (path.basename(file) === 'state.json') order.push(`state.json${opts.sync ? ' synced' : ''}`);
      return nodeIo.writeAtomic(file, data, opts);
    },
  });
  const store = await openIn(dir, { io, durability: 'sync' });
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  order.length = 0;
  await store.setResumeToken('a', 'tok', { writer: key(1) });
  assert.deepEqual(order, ['synced key', 'state.json synced']);
});

test('an append sent again with its key is answered with its seq and written once, also after a restart and after a crash that lost it', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  const entry = { ts: 't1', role: 'user', text: 'hi', cost: 1 };
  const seq = await store.appendTranscript('a', entry, { writer: key(1) });
  assert.equal(await store.appendTranscript('a', entry, { writer: key(1) }), seq);
  store = await reopen(store);
  assert.equal(await store.appendTranscript('a', entry, { writer: key(1) }), seq, 'after a restart');
  assert.equal((await store.readTranscript('a')).length, 1);
  assert.equal((await store.transcriptUsage('a')).cost, 1);

  // What a crash between the key's line and the append leaves: a line whose bytes are not in the file.
  await store.close();
  const file = path.join(dir, 'transcripts', 'a.jsonl');
  const st = lstatSync(file);
  const log = path.join(dir, '.herrscher-state', 'append-keys.log');
  const lost = { w: 'writer-test-1', q: 2, a: { seq: seq + 1 }, p: { f: 'transcripts/a.jsonl', i: st.ino, o: st.size, n: 40, c: 1 } };
  writeFileSync(log, `${readFileSync(log, 'utf8')}${sealLine(JSON.stringify(lost))}`);
  store = await openIn(dir);
  assert.equal(await store.appendTranscript('a', { ts: 't2', role: 'user', text: 'again' }, { writer: key(2) }), seq + 1);
  assert.deepEqual((await store.readTranscript('a')).map((e) => e.ts), ['t1', 't2'], 'the lost append is applied by its retry, once');
  assert.equal(await store.appendTranscript('a', entry, { writer: key(1) }), seq, 'the first key is still answered');
  assert.equal((await store.readTranscript('a')).length, 2);
});

test('a start that keeps the log as it is numbers its next commit after the last one: a crash before that commit\'s rename still leaves its key out', async (t) => {
  const dir = tempDir();
  let failState = false;
  const io = withIo({
    writeAtomic: (file, data, opts) => (failState && path.basename(file) === 'state.json' ? Promise.reject(errno('EIO', 'rename')) : nodeIo.writeAtomic(file, data, opts)),
  });
  let store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('a'), key(1));
  await store.setResumeToken('a', 'one', { writer: key(2) });
  await store.setResumeToken('a', 'two', { writer: key(3) });
  const ino = lstatSync(keysLog(dir)).ino;
  store = await reopen(store, { io });
  assert.equal(lstatSync(keysLog(dir)).ino, ino, 'every line counts: the log is not written again');
  // The commit's line is written, its state.json never is; the close writes nothing more (as a crash).
  failState = true;
  await assert.rejects(() => store.setResumeToken('a', 'lost', { writer: key(4) }), storeError('io', [], 'EIO'));
  failState = false;
  store = await reopen(store, { io });
  assert.deepEqual(await store.setResumeToken('a', 'retried', { writer: key(4) }), { found: true, changed: true });
  assert.equal(store.findSession('a')?.resumeToken, 'retried', 'the retry of the write that never landed is applied');
  assert.deepEqual(await store.setResumeToken('a', 'one', { writer: key(2) }), { found: true, changed: true });
  assert.equal(store.findSession('a')?.resumeToken, 'retried', 'an earlier key is answered, not applied');
});
