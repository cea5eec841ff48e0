// Idempotency keys of the state document's writes: a write sent again with the key of one already
// applied is answered as that one was and not applied again, after a restart too; a crash between
// the table's write and state.json's rename leaves the key unapplied, so the retry applies it.
import assert from 'node:assert/strict';
import { lstatSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { sealLine } from '../../src/store/sealed-line.js';
import { newSession, openIn, reopen, storeError } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const key = (seq: number) => ({ id: 'writer-test-1', seq });
const writersFile = (dir: string) => path.join(dir, '.herrscher-state', 'writers.json');

interface Table {
  before: unknown;
  table: [string, [number, unknown][]][];
  last: [string, number, unknown][];
}

/** The table as the next commit writes it: the last commit's keys (it reached the file) moved into the table. */
function settle(t: Table): void {
  for (const [id, seq, answer] of t.last) {
    const row = t.table.find(([w]) => w === id);
    if (row) row[1].push([seq, answer]);
    else t.table.push([id, [[seq, answer]]]);
  }
  t.last = [];
}

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

test('a crash after the table was written and before state.json was replaced: the write is not applied, so its retry applies it', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'), key(1));
  await store.setResumeToken('a', 'first', { writer: key(2) });
  // What the crash leaves: a table whose last commit (key 3) names state.json's stamp as it is now.
  const stateFile = store.statePath;
  await store.close();
  const st = lstatSync(stateFile);
  const table = JSON.parse(readFileSync(writersFile(dir), 'utf8')) as Table;
  settle(table);
  table.before = { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
  table.last = [['writer-test-1', 3, { found: true, changed: true }]];
  writeFileSync(writersFile(dir), JSON.stringify(table));
  store = await openIn(dir);
  assert.deepEqual(await store.setResumeToken('a', 'second', { writer: key(3) }), { found: true, changed: true });
  assert.equal(store.findSession('a')?.resumeToken, 'second', 'the retry of a write the crash lost is applied');
  assert.deepEqual(await store.setResumeToken('a', 'first', { writer: key(2) }), { found: true, changed: true });
  assert.equal(store.findSession('a')?.resumeToken, 'second', 'an earlier key is still answered, not applied');
});

test('a table whose last commit did reach state.json (its stamp changed since) counts that commit', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'), key(1));
  await store.close();
  const table = JSON.parse(readFileSync(writersFile(dir), 'utf8')) as Table;
  settle(table);
  table.before = { ino: 1, size: 2, mtimeMs: 3 };
  table.last = [['writer-test-1', 2, { found: true, changed: true }]];
  writeFileSync(writersFile(dir), JSON.stringify(table));
  store = await openIn(dir);
  assert.deepEqual(await store.setResumeToken('a', 'x', { writer: key(2) }), { found: true, changed: true });
  assert.equal(store.findSession('a')?.resumeToken, undefined, 'the recorded write is answered, not applied');
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
