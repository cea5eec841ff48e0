// Names: session/add enforces Herrscher's rule, and every method that derives a path from a name
// refuses anything but one safe path component, so nothing outside the state dir is ever read or
// written (Go's filepath.Join walks `..` out of it).
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { Store } from '../../src/store/store.js';
import { newSession, openIn, pathMethods, storeError, text } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const UNSAFE = ['', '.', '..', '../evil', '../../evil', 'a/b', '/abs', 'a\\b', '..\\evil', 'a\0b', 'x/../../evil'];


/** Every file under `root` with its bytes, to compare before and after. */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(root, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      if (r === '.herrscher-state') continue; // the store's own bookkeeping (the write-ahead log)
      if (statSync(path.join(root, r)).isDirectory()) {
        out[`${r}/`] = '';
        walk(r);
      } else out[r] = readFileSync(path.join(root, r)).toString('base64');
    }
  };
  walk('');
  return out;
}

for (const [method, call] of pathMethods) {
  test(`${method} refuses every name that is not one safe path component (invalid-name) and touches nothing`, async (t) => {
    const root = tempDir();
    const dir = path.join(root, 'state');
    mkdirSync(dir);
    // Bait where `..` names would land, inside the state dir and beside it.
    const bait = '{"ts":"bait","role":"user","text":"x"}\n';
    for (const d of [root, dir]) {
      writeFileSync(path.join(d, 'evil.jsonl'), bait);
      writeFileSync(path.join(d, 'evil.log'), 'bait\n');
    }
    const store = await openIn(dir);
    t.after(() => store.close());
    const before = tree(root);
    for (const name of UNSAFE) {
      await assert.rejects(() => call(store, name), storeError('invalid-name', [`name ${JSON.stringify(name)} must`]), JSON.stringify(name));
    }
    await store.flush();
    assert.deepEqual(tree(root), before);
  });
}

test('an append for a legacy row whose name is unsafe is refused as invalid-name, though the row exists', async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), JSON.stringify({ sessions: [{ name: '../evil', incarnation: `inc_${'A'.repeat(26)}` }] }));
  const store = await openIn(dir);
  t.after(() => store.close());
  assert.equal(store.findSession('../evil')?.name, '../evil');
  await assert.rejects(() => store.appendTranscript('../evil', { ts: 't', role: 'user', text: 'x' }), storeError('invalid-name', ['must be one path component']));
  assert.deepEqual(readdirSync(dir).filter((n) => n !== '.herrscher-state').sort(), ['state.json']);
});

test('a legacy row whose name breaks the session rule but is one path component keeps working', async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), JSON.stringify({ sessions: [{ name: 'My Session é', incarnation: `inc_${'A'.repeat(26)}` }] }));
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.appendTranscript('My Session é', { ts: 't1', role: 'user', text: 'x' });
  assert.equal(await store.appendParticipant('My Session é', 'u1'), true);
  assert.equal(text(path.join(dir, 'transcripts', 'My Session é.jsonl')), '{"ts":"t1","role":"user","text":"x"}\n');
  assert.deepEqual(await store.readParticipants('My Session é'), ['u1']);
});

test('sessionInfos lists every row, giving no transcript to a legacy row whose name is unsafe', async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), JSON.stringify({
    sessions: [{ name: 'ok', incarnation: `inc_${'A'.repeat(26)}` }, { name: '../evil', incarnation: `inc_${'B'.repeat(26)}` }],
  }));
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.appendTranscript('ok', { ts: 't1', role: 'user', text: 'x' });
  const infos = await store.sessionInfos();
  assert.deepEqual(infos.map((i) => [i.session.name, i.lastTs]), [['ok', 't1'], ['../evil', '']]);
  const none = { entries: 0, cost: 0, tokens_in: 0, tokens_out: 0, cache_read: 0, cache_create: 0, dur_ms: 0, firstTs: '', lastTs: '' };
  assert.deepEqual(infos[1]?.usage, none);
});

test('a name with a lone surrogate is refused: its file name would be the one of its U+FFFD twin', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await assert.rejects(() => store.transcriptUsage('a\uD800'), storeError('invalid-name', ['must not contain a lone surrogate']));
});

// ---- session/add: Herrscher's rule ------------------------------------------------------------

const accepted = ['a', 'Z', '0', 'a-b_c', '9lives', `A${'b'.repeat(63)}`];
const refused = ['', '-a', '_a', 'a'.repeat(65), 'a b', ' a', 'a.b', 'é', 'a/b', '..', '.', 'a\0', 'a\n', 'a\\b'];

test('addSession accepts names of Herrscher\'s rule: 1-64 ASCII letters, digits, - and _, starting alphanumeric', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  for (const name of accepted) assert.equal((await store.addSession(newSession(name))).name, name);
  assert.deepEqual(store.listSessions().map((s) => s.name), accepted);
});

test('addSession refuses names outside ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$ as invalid-name and writes nothing', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  for (const name of refused) {
    await assert.rejects(
      () => store.addSession(newSession(name)),
      storeError('invalid-name', [`name ${JSON.stringify(name)} must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`]),
      JSON.stringify(name),
    );
  }
  assert.deepEqual(store.listSessions(), []);
  assert.deepEqual(readdirSync(dir).filter((n) => n !== '.herrscher-state'), []);
});

test('an append for a name with no session row is refused as unknown-session and creates no file', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('real'));
  await assert.rejects(() => store.appendTranscript('ghost', { ts: 't', role: 'user', text: 'x' }), storeError('unknown-session', ['no session named "ghost"']));
  await assert.rejects(() => store.appendParticipant('ghost', 'u1'), storeError('unknown-session', ['no session named "ghost"']));
  assert.deepEqual(readdirSync(dir).filter((n) => n !== '.herrscher-state').sort(), ['state.json']);
});

test('an append after removeSession is refused, so a late append cannot recreate a closed session\'s files', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  await store.removeSession('s');
  await assert.rejects(() => store.appendTranscript('s', { ts: 't', role: 'user', text: 'x' }), storeError('unknown-session'));
  await assert.rejects(() => store.appendParticipant('s', 'u1'), storeError('unknown-session'));
  assert.deepEqual(readdirSync(dir).filter((n) => n !== '.herrscher-state').sort(), ['state.json']);
});

test('an append issued right after addSession waits for the row\'s commit and succeeds', async (t) => {
  const dir = tempDir();
  const store = await Store.open(statePathIn(dir));
  t.after(() => store.close());
  const added = store.addSession(newSession('s'));
  const appended = store.appendTranscript('s', { ts: 't1', role: 'user', text: 'x' });
  const joined = store.appendParticipant('s', 'u1');
  await added;
  await appended;
  assert.equal(await joined, true);
  assert.equal(await store.lastTranscriptTs('s'), 't1');
});
