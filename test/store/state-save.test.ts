// Store.saveState, what state/save runs: Go's Save of a whole in-memory document. The bytes are
// the Go goldens' state.json for the same document; compare-and-set on the state revision; a
// refusal or failed write leaves memory and disk as they were.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { test } from 'node:test';
import type { StateDocument } from '../../src/protocol/model.js';
import { MAX_DOCUMENT_DEPTH } from '../../src/store/go-decode.js';
import { loadGoldens } from '../helpers/goldens.js';
import { countingIo, errno, newSession, openIn, reopen, snapshot, storeError, text } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const INC_A = `inc_${'A'.repeat(26)}`;
const INC_B = `inc_${'B'.repeat(26)}`;
const INC = /^inc_[A-Z2-7]{26}$/;

const goldensWithState = loadGoldens().filter((g) => g.files['state.json']?.text !== undefined);

test('the goldens have state.json texts to compare with', () => {
  assert.ok(goldensWithState.length >= 5, `only ${goldensWithState.length} goldens hold a state.json text`);
});

for (const golden of goldensWithState) {
  test(`saving the document of golden "${golden.name}" writes Go's state.json bytes exactly`, async (t) => {
    // The goldens hold incarnations normalised to inc_<26>: real, distinct ones stand in for them.
    let n = 0;
    const goText = (golden.files['state.json']?.text as string)
      .replace(/inc_<26>/g, () => `inc_${String.fromCharCode(65 + n++).repeat(26)}`);
    const store = await openIn(tempDir());
    t.after(() => store.close());
    const out = await store.saveState(JSON.parse(goText) as StateDocument, store.revision);
    assert.equal(out.changed, true);
    assert.equal(text(store.statePath), goText);
    // Saved again, the same document is no change: nothing is written.
    const before = snapshot(store.statePath);
    assert.deepEqual(await store.saveState(JSON.parse(goText) as StateDocument, out.revision), { revision: out.revision, changed: false });
    assert.deepEqual(snapshot(store.statePath), before);
  });
}

test('a save keeps the rows in the order given, every field and unknown fields, and memory matches the file after a reload', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a', { channelID: 'c1' }));
  await store.addSession(newSession('b', { channelID: 'c2' }));
  const doc = structuredClone(store.getPersistedState());
  const [a, b] = doc.sessions ?? [];
  assert.ok(a && b);
  doc.sessions = [{ ...b, id: 'custom', dir: '/w', future: { x: [1, 'y'] } }, { ...a, name: 'a', archived: false, cost_cap: 0 }];
  (doc as Record<string, unknown>).repo = '/legacy';
  (doc as Record<string, unknown>).extra = 'kept';
  const out = await store.saveState(doc, store.revision);
  assert.deepEqual(out, { revision: 3, changed: true });
  const file = JSON.parse(text(store.statePath)) as StateDocument & { extra: string };
  assert.deepEqual(file.sessions?.map((r) => r.name), ['b', 'a']);
  assert.equal(file.sessions?.[0]?.id, 'custom');
  assert.deepEqual(file.sessions?.[0]?.future, { x: [1, 'y'] });
  assert.equal('archived' in (file.sessions?.[1] ?? {}), false, 'zero omitempty fields are not written');
  assert.equal(file.repo, '/legacy');
  assert.equal(file.extra, 'kept');
  const memory = store.getPersistedState();
  store = await reopen(store);
  assert.deepEqual(store.getPersistedState(), memory, 'memory held what the file holds');
});

test('a row without an incarnation, or repeating an earlier one, gets a fresh one; a row without an id keeps none (as Go\'s Save)', async (t) => {
  const store = await openIn(tempDir());
  t.after(() => store.close());
  const doc: StateDocument = {
    home: { id: '', type: '' },
    sessions: [
      { name: 'x', channelID: '', type: '', cmd: '', incarnation: INC_A },
      { name: 'y', channelID: '', type: '', cmd: '', incarnation: INC_A },
      { name: 'z', channelID: '', type: '', cmd: '' },
    ],
  };
  await store.saveState(doc, 0);
  const rows = (JSON.parse(text(store.statePath)) as StateDocument).sessions ?? [];
  assert.equal(rows[0]?.incarnation, INC_A, 'the first keeps its own');
  assert.match(rows[1]?.incarnation ?? '', INC);
  assert.notEqual(rows[1]?.incarnation, INC_A);
  assert.match(rows[2]?.incarnation ?? '', INC);
  assert.ok(rows.every((r) => !('id' in r)), 'no id assigned');
  assert.deepEqual(store.getPersistedState().sessions?.map((r) => r.incarnation), rows.map((r) => r.incarnation));
});

test('a stale revision is a conflict carrying the current one, and changes neither memory nor disk', async (t) => {
  const store = await openIn(tempDir());
  t.after(() => store.close());
  await store.addSession(newSession('a', { incarnation: INC_B }));
  const before = snapshot(store.statePath);
  const memory = store.getPersistedState();
  const doc: StateDocument = { home: { id: 'h', type: 'category' }, sessions: [] };
  await assert.rejects(() => store.saveState(doc, 0), (err: unknown) => {
    storeError('conflict', ['revision 1, not 0'])(err);
    assert.deepEqual((err as { data?: unknown }).data, { revision: 1 });
    return true;
  });
  assert.equal(store.getPersistedState(), memory);
  assert.deepEqual(snapshot(store.statePath), before);
});

test('a revision ahead of the current one (never given out) is a conflict too, and changes neither memory nor disk', async (t) => {
  const store = await openIn(tempDir());
  t.after(() => store.close());
  await store.addSession(newSession('a', { incarnation: INC_B }));
  const before = snapshot(store.statePath);
  const memory = store.getPersistedState();
  const doc: StateDocument = { home: { id: 'h', type: 'category' }, sessions: [] };
  await assert.rejects(() => store.saveState(doc, store.revision + 1), (err: unknown) => {
    storeError('conflict', ['revision 1, not 2'])(err);
    assert.deepEqual((err as { data?: unknown }).data, { revision: 1 });
    return true;
  });
  assert.equal(store.getPersistedState(), memory);
  assert.deepEqual(snapshot(store.statePath), before);
});

test('a save waits for mutations in flight and is refused when they moved the revision', async (t) => {
  const store = await openIn(tempDir());
  t.after(() => store.close());
  const rev = store.revision;
  const add = store.addSession(newSession('a'));
  const save = store.saveState({ home: { id: '', type: '' }, sessions: null }, rev);
  await add;
  await assert.rejects(save, storeError('conflict'));
  assert.equal(store.findSession('a')?.name, 'a', 'the add stands');
});

test('a failed write rejects the save and leaves memory and disk as they were', async (t) => {
  const dir = tempDir();
  let fail = false;
  const { io } = countingIo({
    writeAtomic: async (...args) => {
      if (fail) throw errno('ENOSPC');
      const { nodeIo } = await import('../../src/store/io.js');
      return nodeIo.writeAtomic(...args);
    },
  });
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  const before = readFileSync(statePathIn(dir));
  const memory = store.getPersistedState();
  const rev = store.revision;
  fail = true;
  await assert.rejects(() => store.saveState({ home: { id: 'h', type: 'forum' }, sessions: [] }, rev), storeError('io', [], 'ENOSPC'));
  assert.equal(store.getPersistedState(), memory);
  assert.equal(store.revision, rev);
  assert.deepEqual(readFileSync(statePathIn(dir)), before);
});

test('a value the file cannot hold is refused before anything is written', async (t) => {
  const store = await openIn(tempDir());
  t.after(() => store.close());
  const before = snapshot(store.statePath);
  const bad = [
    { home: { id: '', type: '' }, sessions: [{ name: 'a', channelID: '', type: '', cmd: '', cost_cap: Number.NaN }] },
    { home: { id: '', type: '' }, sessions: [{ name: 'a', channelID: '', type: '', cmd: '', Name: 'b' }] },
    { home: { id: '', type: '' }, sessions: null, Workspace: '/x' },
  ] as StateDocument[];
  for (const doc of bad) await assert.rejects(() => store.saveState(doc, 0), storeError('invalid-input'));
  assert.deepEqual(snapshot(store.statePath), before);
  assert.equal(store.revision, 0);
});

test('a revision of an earlier run is a conflict when its epoch is given, even where the numbers match', async (t) => {
  const dir = tempDir();
  const first = await openIn(dir);
  await first.addSession(newSession('a', { incarnation: INC_A }));
  const { revision: seen, epoch: seenEpoch } = first;
  await first.close();
  // The next run counts from 0 again: one commit of another writer brings it to the same number.
  const second = await openIn(dir);
  t.after(() => second.close());
  await second.addSession(newSession('b', { incarnation: INC_B }));
  assert.equal(second.revision, seen, 'the two runs reached the same revision number');
  assert.notEqual(second.epoch, seenEpoch);
  const before = snapshot(second.statePath);
  const stale: StateDocument = { home: { id: '', type: '' }, sessions: [newSession('a', { incarnation: INC_A }) as StateDocument['sessions'] extends (infer R)[] | null ? R : never] };
  await assert.rejects(() => second.saveState(stale, seen, seenEpoch), (err: unknown) => {
    storeError('conflict', ['another run'])(err);
    assert.deepEqual((err as { data?: unknown }).data, { revision: second.revision });
    return true;
  });
  assert.deepEqual(snapshot(second.statePath), before, "b's row is not overwritten");
  assert.deepEqual(await second.saveState(second.getPersistedState(), second.revision, second.epoch), { revision: second.revision, changed: false });
});

test('a save that changes nothing writes the file when there is none (as Go\'s Save), and nothing when there is one', async (t) => {
  const dir = tempDir();
  const { io, calls } = countingIo();
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  assert.equal(existsSync(store.statePath), false, 'a fresh dir has no state.json');
  const out = await store.saveState(structuredClone(store.getPersistedState()), store.revision);
  assert.deepEqual(out, { revision: 0, changed: false });
  assert.equal(existsSync(store.statePath), true, 'the unchanged document was written');
  assert.deepEqual(JSON.parse(text(store.statePath)), JSON.parse(JSON.stringify(store.getPersistedState())));
  const writes = calls.writeAtomic;
  await store.saveState(structuredClone(store.getPersistedState()), store.revision);
  assert.equal(calls.writeAtomic, writes, 'with the file there, an unchanged save writes nothing');
  // Removed by someone else: the next save writes it again.
  rmSync(store.statePath);
  await store.saveState(structuredClone(store.getPersistedState()), store.revision);
  assert.equal(existsSync(store.statePath), true);
});

test('a save refuses a top-level key Go would fold onto a known field, and a value the next start could not read; memory and disk stay as they were', async (t) => {
  const store = await openIn(tempDir());
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  const before = snapshot(store.statePath);
  const memory = structuredClone(store.getPersistedState());
  const withKey = (key: string, value: unknown): StateDocument => ({ ...structuredClone(memory), [key]: value }) as StateDocument;
  // "Home" and "ſessions" are what Go's decoder reads as "home" and "sessions" (ſ folds to s).
  for (const key of ['Home', 'ſessions']) {
    await assert.rejects(store.saveState(withKey(key, 'x'), store.revision), storeError('invalid-input', [`state.${key}`, 'only in case']));
  }
  // A value at the top level sits one level deep: the deepest one accepted must load again.
  const nested = (levels: number): unknown => {
    let v: unknown = 'leaf';
    for (let i = 0; i < levels; i++) v = { v };
    return v;
  };
  await assert.rejects(store.saveState(withKey('extra', nested(MAX_DOCUMENT_DEPTH)), store.revision), storeError('invalid-input', ['state.extra', 'nested deeper']));
  assert.deepEqual(snapshot(store.statePath), before, 'the file is as it was');
  assert.deepEqual(store.getPersistedState(), memory, 'memory is as it was');
  await store.saveState(withKey('extra', nested(MAX_DOCUMENT_DEPTH - 1)), store.revision);
  const reopened = await reopen(store);
  t.after(() => reopened.close());
  assert.deepEqual((reopened.getPersistedState() as Record<string, unknown>).extra, nested(MAX_DOCUMENT_DEPTH - 1), 'the next start reads what was accepted');
});
