// state.json changed by another process while the store runs (an edit by hand, a process that
// wrote it before): noticed by size, mtime or inode before the next write and on refresh(),
// loaded (a new revision, reported to the commit listeners), logged at warn, never overwritten
// unseen. Our own writes are never taken for someone else's.
import assert from 'node:assert/strict';
import { readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import type { StateDocument } from '../../src/protocol/model.js';
import type { Store } from '../../src/store/store.js';
import { newSession, openIn, snapshot, storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const INC_A = `inc_${'A'.repeat(26)}`;

interface Opened {
  store: Store;
  file: string;
  warnings: string[];
  errors: string[];
  commits: { revision: number; before: StateDocument; after: StateDocument }[];
}

async function open(t: { after(fn: () => Promise<void>): void }): Promise<Opened> {
  const dir = tempDir();
  const warnings: string[] = [];
  const errors: string[] = [];
  const store = await openIn(dir, { warn: (m) => warnings.push(m), error: (m) => errors.push(m) });
  t.after(() => store.close());
  const commits: Opened['commits'] = [];
  store.watch({ stateCommitted: (revision, before, after) => commits.push({ revision, before, after }) });
  return { store, file: statePathIn(dir), warnings, errors, commits };
}

/** Replaces state.json as an editor saving by rename would. */
function editByRename(file: string, doc: unknown): void {
  writeFileSync(`${file}.edit`, JSON.stringify(doc, null, 2));
  renameSync(`${file}.edit`, file);
}

const fileDoc = (file: string): StateDocument => JSON.parse(readFileSync(file, 'utf8')) as StateDocument;

test('a file replaced by another process is loaded on refresh: a new revision, the listeners told, a warning', async (t) => {
  const o = await open(t);
  await o.store.addSession(newSession('a'));
  const edited = { ...fileDoc(o.file), instanceID: 'edited', sessions: [...(fileDoc(o.file).sessions ?? []), { name: 'b', incarnation: INC_A }] };
  editByRename(o.file, edited);
  await o.store.refresh();
  assert.equal(o.store.getPersistedState().instanceID, 'edited');
  assert.equal(o.store.findSession('b')?.incarnation, INC_A);
  assert.equal(o.store.findSession('b')?.id, 's_b', 'ids are backfilled as Go\'s LoadState does');
  assert.equal(o.store.revision, 2);
  assert.equal(o.commits.at(-1)?.after.instanceID, 'edited');
  assert.equal(o.warnings.filter((w) => w.includes('changed by another process')).length, 1, o.warnings.join('\n'));
  // Nothing more changed: a second look loads nothing.
  await o.store.refresh();
  assert.equal(o.store.revision, 2);
  assert.equal(o.warnings.length, 1);
});

test('a write after an outside edit is applied on top of it, never over it', async (t) => {
  const o = await open(t);
  await o.store.addSession(newSession('a'));
  editByRename(o.file, { ...fileDoc(o.file), workspace: '/by-hand' });
  // No refresh: the write itself looks first.
  await o.store.setResumeToken('a', 'tok');
  const doc = fileDoc(o.file);
  assert.equal(doc.workspace, '/by-hand', 'the edit was kept');
  assert.equal(doc.sessions?.[0]?.resumeToken, 'tok', 'and the write applied');
  assert.equal(o.store.getPersistedState().workspace, '/by-hand');
  assert.equal(o.store.revision, 3, 'the load and the write are each a revision');
});

test('a write the outside edit makes impossible is refused, and the edit stays as it is', async (t) => {
  const o = await open(t);
  await o.store.addSession(newSession('a'));
  editByRename(o.file, { ...fileDoc(o.file), sessions: [...(fileDoc(o.file).sessions ?? []), { name: 'b', incarnation: INC_A }] });
  const before = readFileSync(o.file, 'utf8');
  await assert.rejects(() => o.store.addSession(newSession('b')), storeError('exists'));
  assert.equal(readFileSync(o.file, 'utf8'), before);
  assert.equal(o.store.findSession('b')?.incarnation, INC_A);
});

test('an outside file that cannot be loaded is kept: reads keep the last document, writes are refused until it is fixed', async (t) => {
  const o = await open(t);
  await o.store.addSession(newSession('a'));
  writeFileSync(o.file, '{"sessions": [');
  const broken = snapshot(o.file);
  await o.store.refresh();
  await o.store.refresh();
  assert.equal(o.store.findSession('a')?.name, 'a', 'reads go on from the last document');
  assert.equal(o.errors.filter((e) => e.includes('cannot be loaded')).length, 1, 'said once per version of the file');
  await assert.rejects(() => o.store.setResumeToken('a', 'x'), storeError('io', ['changed by another process', 'cannot be loaded'], 'EINVAL'));
  assert.deepEqual(snapshot(o.file), broken, 'never overwritten');
  editByRename(o.file, { home: { id: 'h', type: 'forum' }, sessions: [{ name: 'a', incarnation: INC_A }] });
  assert.deepEqual(await o.store.setResumeToken('a', 'x'), { found: true, changed: true });
  assert.equal(fileDoc(o.file).home.id, 'h');
});

test('a store whose state.json cannot be loaded is unhealthy however long ago that was found, until the file is fixed or removed', async (t) => {
  const o = await open(t);
  const later = (): boolean => o.store.health.snapshot(Date.now() + 10 * 60_000).healthy;
  await o.store.addSession(newSession('a'));
  const good = readFileSync(o.file);
  for (const mend of ['fixed', 'removed'] as const) {
    writeFileSync(o.file, '{"sessions": [');
    await o.store.refresh();
    assert.equal(later(), false, `broken, before ${mend}`);
    if (mend === 'fixed') editByRename(o.file, JSON.parse(good.toString()));
    else rmSync(o.file);
    await o.store.refresh();
    assert.equal(later(), true, mend);
  }
  assert.deepEqual(await o.store.setArchived('a', true), { found: true, changed: true }, 'writes go on after the removal too');
});

test('a state.json removed by another process is not an edit: the document stays and the next write puts it back', async (t) => {
  const o = await open(t);
  await o.store.addSession(newSession('a'));
  rmSync(o.file);
  await o.store.refresh();
  assert.equal(o.store.findSession('a')?.name, 'a');
  assert.equal(o.store.revision, 1);
  await o.store.setWorkspace('/w');
  assert.deepEqual(fileDoc(o.file).sessions?.map((r) => r.name), ['a']);
  // Made again by someone else later, it is an edit like any other.
  editByRename(o.file, { sessions: [{ name: 'z', incarnation: INC_A }] });
  await o.store.refresh();
  assert.deepEqual(o.store.listSessions().map((r) => r.name), ['z']);
});

test('an outside file with rows lacking incarnations gets them, persisted at once (Go\'s LoadState)', async (t) => {
  const o = await open(t);
  await o.store.addSession(newSession('a'));
  editByRename(o.file, { sessions: [{ name: 'legacy' }] });
  await o.store.refresh();
  const inc = o.store.findSession('legacy')?.incarnation;
  assert.match(inc ?? '', /^inc_[A-Z2-7]{26}$/);
  assert.equal(fileDoc(o.file).sessions?.[0]?.incarnation, inc);
  // That write is ours: not taken for another outside change.
  await o.store.refresh();
  assert.equal(o.warnings.filter((w) => w.includes('changed by another process')).length, 1);
});

test('the store\'s own writes, many and concurrent, are never taken for an outside change', async (t) => {
  const o = await open(t);
  const writes: Promise<unknown>[] = [];
  for (let i = 0; i < 40; i++) {
    writes.push(o.store.addSession(newSession(`s${i}`)));
    if (i % 5 === 0) writes.push(o.store.refresh());
  }
  await Promise.all(writes);
  await o.store.refresh();
  assert.deepEqual(o.warnings, []);
  assert.equal(o.store.listSessions().length, 40);
  assert.equal(o.commits.length, o.store.revision);
});

test('an outside edit is noticed by any one of size, mtime or inode changing alone, and the warning says both versions', async (t) => {
  const o = await open(t);
  await o.store.addSession(newSession('a'));
  const doc = fileDoc(o.file);
  const was = statSync(o.file);
  const text = (id: string): string => JSON.stringify({ ...doc, instanceID: id }, null, 2);
  const base = text('x'.repeat(8));
  const cases: { what: string; write(): void }[] = [
    // Same inode, same size, another mtime: an editor writing in place a change of equal length.
    { what: 'mtime', write: () => { writeFileSync(o.file, text('m'.repeat(8))); utimesSync(o.file, was.atime, new Date(was.mtimeMs + 5000)); } },
    // Same inode, same mtime, another size.
    { what: 'size', write: () => { const m = statSync(o.file).mtime; writeFileSync(o.file, text('s'.repeat(9))); utimesSync(o.file, m, m); } },
    // Another inode, same size and mtime: a rename over it of a file stamped like it.
    { what: 'inode', write: () => {
      const st = statSync(o.file);
      writeFileSync(`${o.file}.edit`, text('i'.repeat(9)));
      utimesSync(`${o.file}.edit`, st.atime, st.mtime);
      renameSync(`${o.file}.edit`, o.file);
    } },
  ];
  writeFileSync(o.file, base);
  await o.store.refresh();
  assert.equal(o.store.getPersistedState().instanceID, 'x'.repeat(8));
  for (const c of cases) {
    const warned = o.warnings.length;
    const before = statSync(o.file);
    c.write();
    const after = statSync(o.file);
    await o.store.refresh();
    const id = (JSON.parse(readFileSync(o.file, 'utf8')) as StateDocument).instanceID;
    assert.equal(o.store.getPersistedState().instanceID, id, `a change of ${c.what} alone is noticed`);
    assert.equal(o.warnings.length, warned + 1, o.warnings.join('\n'));
    const stamp = (s: { ino: number; size: number; mtimeMs: number }): string => `inode ${s.ino}, ${s.size} bytes, mtime ${new Date(s.mtimeMs).toISOString()}`;
    assert.equal(o.warnings.at(-1), `state.json was changed by another process (now ${stamp(after)}; was ${stamp(before)}); loaded it: later reads and writes start from it`);
  }
});
