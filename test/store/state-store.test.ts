// state.json's single writer at its edges, through the fs seam: a file that appears where there
// was none, a stat that fails, a file replaced while it is read, a replace that reports no stamp,
// a refresh while a commit is under way, what a batch with unchanged mutations writes, and the
// store used directly without a log. outside-change.test.ts and failures.test.ts hold the common cases.
import assert from 'node:assert/strict';
import { readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import type { Io } from '../../src/store/io.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Doc } from '../../src/store/state-document.js';
import { StateStore } from '../../src/store/state-store.js';
import { countingIo, errno, newSession, openIn, storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

interface Said {
  warnings: string[];
  errors: string[];
}

function logs(): Said & { warn: (m: string) => void; error: (m: string) => void } {
  const said: Said = { warnings: [], errors: [] };
  return { ...said, warn: (m) => said.warnings.push(m), error: (m) => said.errors.push(m) };
}

/** A promise and the function that resolves it. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

const docText = (doc: object): string => JSON.stringify({ home: { id: '', type: '' }, sessions: null, ...doc }, null, 2);

/** Replaces the file as another process saving by rename would. */
function replaceBy(file: string, doc: object): void {
  writeFileSync(`${file}.other`, docText(doc));
  renameSync(`${file}.other`, file);
}

test('a state.json that appears where there was none is loaded on refresh, and the warning says there was no file', async (t) => {
  const dir = tempDir();
  const l = logs();
  const store = await openIn(dir, l);
  t.after(() => store.close());
  const file = statePathIn(dir);
  replaceBy(file, { workspace: '/made-by-hand' });
  await store.refresh();
  assert.equal(store.getPersistedState().workspace, '/made-by-hand');
  assert.equal(l.warnings.length, 1, l.warnings.join('\n'));
  assert.match(l.warnings[0] ?? '', /^state\.json was changed by another process \(now inode \d+, \d+ bytes, mtime [0-9T:.-]+Z; was no file\); loaded it/);
});

test('a stat of state.json that fails on refresh is logged, naming the stat, and changes nothing', async (t) => {
  const dir = tempDir();
  const l = logs();
  let failStat = false;
  const io = withIo({
    lstatNow: (f) => {
      if (failStat && f.endsWith('state.json')) throw errno('EACCES', 'lstat');
      return nodeIo.lstatNow(f);
    },
  });
  const store = await openIn(dir, { ...l, io });
  t.after(() => store.close());
  await store.setWorkspace('/w');
  failStat = true;
  await store.refresh();
  assert.equal(store.getPersistedState().workspace, '/w');
  assert.deepEqual(l.errors, ['loading state.json, changed by another process, failed']);
  await store.refresh();
  assert.equal(l.errors.length, 2, 'each look that fails says so (it is retried at the next)');
  // The commit's own look reports it to the caller.
  await assert.rejects(() => store.setWorkspace('/x'), storeError('io', ['stat state.json: EACCES'], 'EACCES'));
  failStat = false;
  assert.deepEqual(await store.setWorkspace('/x'), { changed: true });
  assert.equal(l.warnings.length, 0, 'the store\'s own file is not taken for another');
});

test('an unloadable outside file is said once however often it is looked at, with the whole reason and EINVAL', async (t) => {
  const dir = tempDir();
  const l = logs();
  const store = await openIn(dir, l);
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  writeFileSync(statePathIn(dir), '{"sessions": [');
  for (let i = 0; i < 3; i++) await store.refresh();
  assert.equal(l.errors.length, 1, l.errors.join('\n'));
  const refused = await store.setWorkspace('/w').then(() => undefined, (err: unknown) => err);
  assert.ok(refused instanceof Error);
  assert.match(refused.message, /^state\.json was changed by another process and cannot be loaded \(.+\); it is left as it is and no write replaces it until it is fixed$/);
  assert.deepEqual((refused as { data?: unknown }).data, { code: 'EINVAL' });
  assert.equal(l.errors[0], refused.message);
  assert.equal(l.errors.length, 1, 'the refused write said nothing more in the log: its caller was told');
});

test('a refresh when nothing changed looks once (one lstat) and loads nothing', async (t) => {
  const dir = tempDir();
  const { io, calls } = countingIo();
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.setWorkspace('/w');
  for (const state of ['a file', 'no file']) {
    const before = { lstatNow: calls.lstatNow, readFile: calls.readFile };
    await store.refresh();
    assert.deepEqual({ lstatNow: calls.lstatNow - before.lstatNow, readFile: calls.readFile - before.readFile }, { lstatNow: 1, readFile: 0 }, state);
    rmSync(statePathIn(dir), { force: true });
  }
});

test('a refresh while a commit is under way answers at once: the commit looks before it writes', async (t) => {
  const dir = tempDir();
  const stalled = gate();
  const entered = gate();
  let stall = false;
  const io = withIo({
    writeAtomic: async (f, d, o) => {
      if (stall) {
        entered.open();
        await stalled.wait;
      }
      return nodeIo.writeAtomic(f, d, o);
    },
  });
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.setWorkspace('/w');
  stall = true;
  const commit = store.setWorkspace('/x');
  await entered.wait;
  // Someone else's edit while our write is held: only a look from an idle store loads it.
  replaceBy(statePathIn(dir), { workspace: '/other' });
  const refreshed = store.refresh().then(() => 'refresh');
  const released = (async () => {
    for (let i = 0; i < 20; i++) await new Promise(setImmediate);
    stalled.open();
    await commit;
    return 'commit';
  })();
  assert.equal(await Promise.race([refreshed, released]), 'refresh');
  await released;
});

test('a state.json replaced while it is read is read again, and the version loaded is the one stamped', async (t) => {
  const dir = tempDir();
  const file = statePathIn(dir);
  writeFileSync(file, docText({ workspace: '/first' }));
  let reads = 0;
  const io = withIo({
    readFile: async (f) => {
      const data = await nodeIo.readFile(f);
      if (f === file && reads++ === 0) replaceBy(file, { workspace: '/second' });
      return data;
    },
  });
  const l = logs();
  const store = await openIn(dir, { ...l, io });
  t.after(() => store.close());
  assert.equal(store.getPersistedState().workspace, '/second');
  assert.equal(reads, 2);
  // What was loaded is what is stamped: the second version is not taken for a change, a third is.
  await store.refresh();
  assert.equal(l.warnings.length, 0);
  replaceBy(file, { workspace: '/third' });
  await store.setSource('src');
  const disk = JSON.parse(readFileSync(file, 'utf8')) as { workspace: string; source: string };
  assert.deepEqual([disk.workspace, disk.source], ['/third', 'src']);
  assert.equal(l.warnings.length, 1);
});

test('a state.json that changes at every read is read four times, then the last read is used', async (t) => {
  const dir = tempDir();
  const file = statePathIn(dir);
  writeFileSync(file, docText({ workspace: '/v0' }));
  let reads = 0;
  const io = withIo({
    readFile: async (f) => {
      const data = await nodeIo.readFile(f);
      if (f === file) replaceBy(file, { workspace: `/v${++reads}` });
      return data;
    },
  });
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  assert.equal(reads, 4, 'three reads again, then it gives up waiting for the writer');
  assert.equal(store.getPersistedState().workspace, '/v3');
});

test('with a replace that reports no stamp, the store stats its own file: its writes are never taken for an outside edit, an edit still is', async (t) => {
  const dir = tempDir();
  const l = logs();
  const io = withIo({ writeAtomic: async (f, d, o) => void (await nodeIo.writeAtomic(f, d, o)) });
  const store = await openIn(dir, { ...l, io });
  t.after(() => store.close());
  await store.setWorkspace('/a');
  await store.setWorkspace('/b');
  await store.refresh();
  assert.deepEqual(l.warnings, []);
  replaceBy(statePathIn(dir), { workspace: '/edit', source: 'longer, so the size differs too' });
  await store.refresh();
  assert.equal(store.getPersistedState().workspace, '/edit');
  assert.equal(l.warnings.length, 1);
});

test('state.json is written private and synced', async (t) => {
  const dir = tempDir();
  const replaces: { sync: boolean; mode: number }[] = [];
  const io = withIo({
    writeAtomic: (f, d, o) => {
      replaces.push({ sync: o.sync, mode: o.mode });
      return nodeIo.writeAtomic(f, d, o);
    },
  });
  const store = await openIn(dir, { io, durability: 'sync' });
  t.after(() => store.close());
  await store.setWorkspace('/w');
  assert.equal(statSync(statePathIn(dir)).mode & 0o777, 0o600);
  assert.deepEqual(replaces, [{ sync: true, mode: 0o600 }]);
});

test('a batch holding a change and unchanged mutations writes the change', async (t) => {
  const dir = tempDir();
  const stalled = gate();
  const entered = gate();
  let stall = true;
  const io = withIo({
    writeAtomic: async (f, d, o) => {
      if (stall) {
        stall = false;
        entered.open();
        await stalled.wait;
      }
      return nodeIo.writeAtomic(f, d, o);
    },
  });
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  const first = store.setWorkspace('/first');
  await entered.wait;
  // Both wait for the stalled commit, and go in the next batch together.
  const changed = store.setSource('src');
  const unchanged = store.setWorkspace('/first');
  stalled.open();
  await Promise.all([first, changed, unchanged]);
  const disk = JSON.parse(readFileSync(statePathIn(dir), 'utf8')) as { source?: string };
  assert.equal(disk.source, 'src');
});

test('an unchanged mutation queued behind a failed write writes nothing, not even a missing file', async (t) => {
  const dir = tempDir();
  const entered = gate();
  const fail = gate();
  const { io, calls } = countingIo({
    writeAtomic: async () => {
      entered.open();
      await fail.wait;
      throw errno('ENOSPC');
    },
  });
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  const failed = store.setWorkspace('/w');
  await entered.wait;
  // Unchanged once the failed one is taken back: the workspace stays ''.
  const queued = store.setWorkspace('');
  fail.open();
  await assert.rejects(failed, storeError('io', [], 'ENOSPC'));
  assert.deepEqual(await queued, { changed: false });
  await store.flush();
  assert.equal(calls.writeAtomic, 1);
});

/** A mutation of the document's workspace, as the store's setters are. */
const setWorkspace = (workspace: string) => (doc: Doc) => ({ doc: doc.workspace === workspace ? doc : { ...doc, workspace }, result: workspace });

test('StateStore used without a log: an outside edit and an unloadable file are handled the same, silently; a listener removed is not called', async () => {
  const dir = tempDir();
  const file = statePathIn(dir);
  const io: Io = nodeIo;
  const state = await StateStore.load(io, file, 'write');
  const seen: string[] = [];
  const off = state.onCommit((_before, after) => seen.push(after.workspace ?? ''));
  await state.mutate(setWorkspace('/a'));
  off();
  await state.mutate(setWorkspace('/b'));
  assert.deepEqual(seen, ['/a']);
  replaceBy(file, { workspace: '/edit' });
  await state.refresh();
  assert.equal(state.document.workspace, '/edit');
  writeFileSync(file, '{');
  await state.refresh();
  await assert.rejects(() => state.mutate(setWorkspace('/c')), storeError('io', ['cannot be loaded'], 'EINVAL'));
  assert.equal(state.document.workspace, '/edit');
});

test('no state.json at open is read once; one made while it is read is read again', async (t) => {
  const dir = tempDir();
  const file = statePathIn(dir);
  let reads = 0;
  let make = false;
  const io = withIo({
    readFile: async (f) => {
      if (f !== file) return nodeIo.readFile(f);
      reads++;
      const data = nodeIo.readFile(f);
      if (make) {
        make = false;
        // The read found nothing; the writer's rename lands right after it.
        await data.catch(() => undefined);
        replaceBy(file, { workspace: '/made' });
      }
      return data;
    },
  });
  const empty = await openIn(dir, { io });
  assert.equal(reads, 1, 'a missing file is looked for once');
  assert.equal(empty.getPersistedState().workspace, undefined);
  await empty.close();
  reads = 0;
  make = true;
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  assert.equal(reads, 2);
  assert.equal(store.getPersistedState().workspace, '/made');
});

test('StateStore without a log: a failing stat on refresh is left for the next look; an error of a commit listener is thrown, not taken for a load failure', async () => {
  const dir = tempDir();
  const file = statePathIn(dir);
  let failStat = false;
  const io = withIo({ lstatNow: (f) => (failStat ? (() => { throw errno('EACCES', 'lstat'); })() : nodeIo.lstatNow(f)) });
  const state = await StateStore.load(io, file, 'write');
  await state.mutate(setWorkspace('/a'));
  failStat = true;
  await state.refresh();
  failStat = false;
  assert.equal(state.document.workspace, '/a');
  const bug = new TypeError('a listener\'s bug');
  state.onCommit(() => {
    throw bug;
  });
  replaceBy(file, { workspace: '/edit' });
  await assert.rejects(() => state.refresh(), (err) => err === bug);
});
