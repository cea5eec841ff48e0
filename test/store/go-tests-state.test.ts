// The Go package's state tests (its cases 1-5 and 9-35, in its order) as store API calls.
// Where Go pokes the struct directly, the equivalent state.json is written first and opened.
// Where Go's result is a defect we fix, the test asserts our behaviour and its name says so.
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { decodeStateText } from '../../src/store/go-decode.js';
import { encodeSession } from '../../src/store/go-json.js';
import type { Store } from '../../src/store/store.js';
import { countingIo, newSession, openIn, reopen, snapshot, storeError, text } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const INCARNATION = /^inc_[A-Z2-7]{26}$/;

/** Opens a store in a fresh dir, optionally with state.json's text written first; closed after the test. */
async function fresh(t: { after(fn: () => Promise<void>): void }, stateFile?: string): Promise<{ dir: string; file: string; store: () => Store; reload(): Promise<Store> }> {
  const dir = tempDir();
  const file = statePathIn(dir);
  if (stateFile !== undefined) writeFileSync(file, stateFile);
  let store = await openIn(dir);
  t.after(() => store.close());
  return {
    dir,
    file,
    store: () => store,
    async reload() {
      store = await reopen(store);
      return store;
    },
  };
}

// ---- applydefaults_test.go ---------------------------------------------------------------

test('TestApplyDefaultsSeedsEmptyFields: applyDefaults fills home, workspace and source of an empty state', async (t) => {
  const { store } = await fresh(t);
  const got = store().applyDefaults({ home: { id: 'h1', type: 'category' }, workspace: '/ws', source: '/src' });
  assert.deepEqual(got.home, { id: 'h1', type: 'category' });
  assert.equal(got.workspace, '/ws');
  assert.equal(got.source, '/src');
  assert.deepEqual(store().getState().home, { id: 'h1', type: 'category' });
  assert.equal(store().workspaceRoot(), '/ws');
  assert.equal(store().sourceDir(), '/src');
});

test('TestApplyDefaultsDoesNotOverrideSetFields: applyDefaults leaves home, workspace and source the file sets', async (t) => {
  const { store } = await fresh(t, JSON.stringify({ home: { id: 'live', type: 'forum' }, workspace: '/live/ws', source: '/live/src' }));
  const got = store().applyDefaults({ home: { id: 'cfg', type: 'category' }, workspace: '/cfg/ws', source: '/cfg/src' });
  assert.deepEqual(got.home, { id: 'live', type: 'forum' });
  assert.equal(got.workspace, '/live/ws');
  assert.equal(got.source, '/live/src');
});

test('TestApplyDefaultsDoesNotPersist: applyDefaults without a save leaves no file and a reload sees none of it', async (t) => {
  const { file, store, reload } = await fresh(t);
  store().applyDefaults({ home: { id: 'h1', type: '' }, workspace: '/ws', source: '/src' });
  const again = await reload();
  assert.equal(existsSync(file), false, 'state.json was never written');
  assert.equal(again.getState().home.id, '');
  assert.equal(again.getState().workspace, undefined);
  assert.equal(again.getState().source, undefined);
});

test('TestApplyDefaultsIgnoresEmptyHome: applyDefaults with no home or a home without id keeps home.id empty', async (t) => {
  const { store } = await fresh(t);
  store().applyDefaults({ workspace: '', source: '' });
  assert.deepEqual(store().getState().home, { id: '', type: '' });
  store().applyDefaults({ home: { id: '', type: 'category' }, workspace: '', source: '' });
  assert.deepEqual(store().getState().home, { id: '', type: '' });
  assert.equal(store().workspaceRoot(), '');
});

// ---- archived_test.go --------------------------------------------------------------------

test('TestSetArchivedPersistsOnChange: setArchived marks the row and persists; an unknown name is found:false', async (t) => {
  const { store, reload } = await fresh(t);
  await store().addSession(newSession('s', { channelID: 'c', type: 'text' }));
  assert.deepEqual(await store().setArchived('s', true), { found: true, changed: true });
  assert.equal(store().findSession('s')?.archived, true);
  assert.deepEqual(await store().setArchived('nope', true), { found: false, changed: false });
  assert.equal((await reload()).findSession('s')?.archived, true);
});

// ---- modelid_test.go ---------------------------------------------------------------------

test('TestSessionModelIDRoundTrips: a session row encodes modelId as "modelId" and decodes it back', () => {
  const line = encodeSession({ name: 's', channelID: '', type: '', cmd: '', modelId: 'claude-opus-5' });
  assert.equal(line, '{"name":"s","channelID":"","type":"","cmd":"","modelId":"claude-opus-5"}');
  const doc = decodeStateText(`{"sessions":[${line}]}`, 'state.json');
  assert.deepEqual(doc.sessions, [{ name: 's', channelID: '', type: '', cmd: '', modelId: 'claude-opus-5' }]);
});

test('TestSessionModelIDOmittedWhenEmpty: a session row without a model (or with "") has no modelId key', () => {
  assert.equal(encodeSession({ name: 's', channelID: '', type: '', cmd: '' }), '{"name":"s","channelID":"","type":"","cmd":""}');
  assert.equal(encodeSession({ name: 's', channelID: '', type: '', cmd: '', modelId: '' }), '{"name":"s","channelID":"","type":"","cmd":""}');
});

test('TestSessionModelIDAbsentInLegacyStateFile: a legacy row without modelId loads with its other fields intact', async (t) => {
  const { store } = await fresh(t, '{"sessions":[{"name":"s","vendor":"claude","cmd":"claude","resumeToken":"tok-1"}]}');
  const s = store().findSession('s');
  assert.equal(s?.modelId, undefined);
  assert.equal(s?.vendor, 'claude');
  assert.equal(s?.cmd, 'claude');
  assert.equal(s?.resumeToken, 'tok-1');
});

test('TestSetBackendTargetWritesModelID: setBackendTarget writes vendor, cmd and modelId and clears the resume token', async (t) => {
  const { file, store, reload } = await fresh(t, '{"sessions":[{"name":"s","vendor":"claude","cmd":"claude","resumeToken":"old"}]}');
  assert.deepEqual(
    await store().setBackendTarget('s', { vendor: 'codex', cmd: 'codex --model gpt-5.5', modelId: 'gpt-5.5' }),
    { found: true, changed: true },
  );
  for (const s of [store().findSession('s'), (await reload()).findSession('s')]) {
    assert.equal(s?.modelId, 'gpt-5.5');
    assert.equal(s?.vendor, 'codex');
    assert.equal(s?.cmd, 'codex --model gpt-5.5');
    assert.equal(s?.resumeToken ?? '', '');
  }
  assert.ok(!text(file).includes('resumeToken'), 'the cleared token is omitted from state.json');
  assert.ok(text(file).includes('"modelId": "gpt-5.5"'));
});

// ---- state_paused_reason_test.go ---------------------------------------------------------

test('TestSetPausedReasonPersists: setPausedReason survives a reload, and "" clears it', async (t) => {
  const { file, store, reload } = await fresh(t);
  await store().addSession(newSession('game'));
  assert.deepEqual(await store().setPausedReason('game', 'cost'), { found: true, changed: true });
  assert.equal((await reload()).findSession('game')?.paused_reason, 'cost');
  assert.deepEqual(await store().setPausedReason('game', ''), { found: true, changed: true });
  assert.equal((await reload()).findSession('game')?.paused_reason ?? '', '');
  assert.ok(!text(file).includes('paused_reason'));
});

test('TestSetPausedReasonUnknownSessionIsNoop: setPausedReason of an unknown name is found:false and writes nothing', async (t) => {
  const { file, store } = await fresh(t);
  assert.deepEqual(await store().setPausedReason('ghost', 'cost'), { found: false, changed: false });
  assert.equal(existsSync(file), false);
});

test('TestSetPausedReasonUnchangedIsNoop: setPausedReason with the same reason writes nothing', async (t) => {
  const dir = tempDir();
  const { io, calls } = countingIo();
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('game', { paused_reason: 'cost' }));
  const before = snapshot(statePathIn(dir));
  const writes = calls.writeAtomic;
  assert.deepEqual(await store.setPausedReason('game', 'cost'), { found: true, changed: false });
  assert.equal(calls.writeAtomic, writes);
  assert.deepEqual(snapshot(statePathIn(dir)), before);
});

// ---- state_resume_test.go ----------------------------------------------------------------

test('TestSetResumeTokenPersists: setResumeToken survives a reload', async (t) => {
  const { store, reload } = await fresh(t);
  await store().addSession(newSession('main'));
  assert.deepEqual(await store().setResumeToken('main', 'sid-1'), { found: true, changed: true });
  assert.equal((await reload()).findSession('main')?.resumeToken, 'sid-1');
});

test('TestSetResumeTokenUnknownSessionIsNoop: setResumeToken of an unknown name is found:false and writes nothing', async (t) => {
  const { file, store } = await fresh(t);
  assert.deepEqual(await store().setResumeToken('ghost', 'sid-1'), { found: false, changed: false });
  assert.equal(existsSync(file), false);
});

test('TestSetResumeTokenUnchangedIsNoop: setResumeToken with the same token writes nothing', async (t) => {
  const dir = tempDir();
  const { io, calls } = countingIo();
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('main', { resumeToken: 'sid-1' }));
  const before = snapshot(statePathIn(dir));
  const writes = calls.writeAtomic;
  assert.deepEqual(await store.setResumeToken('main', 'sid-1'), { found: true, changed: false });
  assert.equal(calls.writeAtomic, writes);
  assert.deepEqual(snapshot(statePathIn(dir)), before);
});

// ---- state_test.go -----------------------------------------------------------------------

const LEGACY = '{"sessions":[{"name":"alpha","channelID":"123","type":"text","cmd":"claude"}]}';

test('TestLoadStateBackfillsSessionID: a legacy row without id loads with id s_<name>', async (t) => {
  const { store } = await fresh(t, LEGACY);
  assert.equal(store().findSession('alpha')?.id, 's_alpha');
});

test('TestLoadStateBackfillsAndPersistsSessionIncarnation: a missing incarnation is assigned, written at load and kept by the next load', async (t) => {
  const { file, store, reload } = await fresh(t, LEGACY);
  const inc = store().findSession('alpha')?.incarnation ?? '';
  assert.match(inc, INCARNATION);
  const onDisk = JSON.parse(text(file)) as { sessions: { id: string; incarnation: string }[] };
  assert.equal(onDisk.sessions[0]?.incarnation, inc);
  assert.equal(onDisk.sessions[0]?.id, 's_alpha', 'the load that persists incarnations writes the backfilled ids too, as Go');
  assert.equal((await reload()).findSession('alpha')?.incarnation, inc);
});

test('TestSessionIncarnationIsStableUntilRecreation: an incarnation survives reloads and a re-added name gets a new one', async (t) => {
  const { store, reload } = await fresh(t);
  const first = await store().addSession(newSession('alpha', { channelID: 'c1' }));
  const old = first.incarnation ?? '';
  assert.match(old, INCARNATION);
  assert.equal((await reload()).findSession('alpha')?.incarnation, old);
  assert.deepEqual(await store().removeSession('alpha'), { removed: true });
  const again = await store().addSession(newSession('alpha', { channelID: 'c2', incarnation: old }));
  assert.match(again.incarnation ?? '', INCARNATION);
  assert.notEqual(again.incarnation, old);
  assert.equal(again.id, 's_alpha', 'the id is reused: the incarnation tells the lifetimes apart');
});

test('TestSaveEnsuresEveryPersistedSessionHasIncarnation: a row written without incarnation has one in memory and on disk after open', async (t) => {
  const { file, store, reload } = await fresh(t, '{"sessions":[{"name":"direct","channelID":"c1"}]}');
  const inc = store().findSession('direct')?.incarnation ?? '';
  assert.match(inc, INCARNATION);
  assert.ok(text(file).includes(`"incarnation": "${inc}"`));
  assert.equal((await reload()).findSession('direct')?.incarnation, inc);
});

test('TestStateRoundTrip: home and a session survive a reload', async (t) => {
  const { store, reload } = await fresh(t);
  await store().setHome({ id: '123', type: 'category' });
  await store().addSession(newSession('a', { channelID: 'c', type: 'text', cmd: 'claude' }));
  const again = await reload();
  assert.deepEqual(again.getState().home, { id: '123', type: 'category' });
  assert.equal(again.listSessions().length, 1);
  assert.equal(again.listSessions()[0]?.name, 'a');
});

test('TestLoadStateMissingFileIsEmpty: a missing state.json opens as an empty state and is not created', async (t) => {
  const { file, store } = await fresh(t);
  assert.deepEqual(store().listSessions(), []);
  assert.deepEqual(store().getState(), { home: { id: '', type: '' }, sessions: null });
  assert.equal(existsSync(file), false);
});

test('TestSessionMutations: addSession, a second add of the name refused with Go\'s message, removeSession', async (t) => {
  const { store } = await fresh(t);
  await store().addSession(newSession('a'));
  assert.equal(store().findSession('a')?.name, 'a');
  await assert.rejects(() => store().addSession(newSession('a')), storeError('exists', ['session "a" already exists']));
  assert.equal(store().listSessions().length, 1);
  assert.deepEqual(await store().removeSession('a'), { removed: true });
  assert.equal(store().findSession('a'), null);
});

test('TestQualifiedName: qualifiedName is <instanceID>__<name>, or the name alone without an instance id', async (t) => {
  const { store } = await fresh(t);
  assert.equal(store().qualifiedName('foo'), 'foo');
  await store().setInstanceID('alice');
  assert.equal(store().qualifiedName('foo'), 'alice__foo');
});

test('TestSetInstanceIDPersists: setInstanceID survives a reload', async (t) => {
  const { store, reload } = await fresh(t);
  assert.deepEqual(await store().setInstanceID('alice'), { changed: true });
  assert.equal((await reload()).getState().instanceID, 'alice');
});

test('TestSetWorkspacePersists: setWorkspace survives a reload', async (t) => {
  const { store, reload } = await fresh(t);
  assert.deepEqual(await store().setWorkspace('/home/u/dev'), { changed: true });
  assert.equal((await reload()).workspaceRoot(), '/home/u/dev');
});

test('TestWorkspaceRootFallsBack: workspaceRoot is "" when empty, the legacy repo when only it is set, then the workspace', async (t) => {
  const empty = await fresh(t);
  assert.equal(empty.store().workspaceRoot(), '');
  const { file, store } = await fresh(t, '{"repo":"/legacy/repo"}');
  assert.equal(store().workspaceRoot(), '/legacy/repo');
  await store().setWorkspace('/ws');
  assert.equal(store().workspaceRoot(), '/ws');
  assert.ok(text(file).includes('"repo": "/legacy/repo"'), 'the legacy repo is kept in the file');
});

test('TestSessionProjectRoundTrips: a session\'s project survives a reload', async (t) => {
  const { store, reload } = await fresh(t);
  await store().addSession(newSession('s', { project: 'myproj' }));
  assert.equal((await reload()).findSession('s')?.project, 'myproj');
});

test('TestSessionLearningConfigRoundTrips: extractor, journal and consolidateEvery survive a reload', async (t) => {
  const { store, reload } = await fresh(t);
  await store().addSession(newSession('s', { extractor: 'roblox', journal: '.neublox/calls.log', consolidateEvery: 5 }));
  const s = (await reload()).findSession('s');
  assert.equal(s?.extractor, 'roblox');
  assert.equal(s?.journal, '.neublox/calls.log');
  assert.equal(s?.consolidateEvery, 5);
});

test('TestBoundGateways: gateways round-trip as given; a legacy row or an empty list has none (Go\'s BoundGateways gives nil)', async (t) => {
  const { file, store, reload } = await fresh(t);
  await store().addSession(newSession('one', { gateways: ['terminal'] }));
  await store().addSession(newSession('two', { gateways: ['chat', 'terminal'] }));
  await store().addSession(newSession('legacy', { channelID: 'c1' }));
  await store().addSession(newSession('bare'));
  await store().addSession(newSession('empty', { gateways: [] }));
  const s = await reload();
  assert.deepEqual(s.findSession('one')?.gateways, ['terminal']);
  assert.deepEqual(s.findSession('two')?.gateways, ['chat', 'terminal']);
  assert.equal(s.findSession('legacy')?.gateways, undefined);
  assert.equal(s.findSession('bare')?.gateways, undefined);
  assert.equal(s.findSession('empty')?.gateways, undefined, 'an empty list is omitted, as Go\'s omitempty');
  assert.equal(text(file).match(/"gateways"/g)?.length, 2);
});

test('TestSetBackendTargetRewritesVendorCmdAndClearsResume: setBackendTarget rewrites vendor and cmd, clears the token; a ghost is found:false', async (t) => {
  const { store } = await fresh(t);
  await store().addSession(newSession('alpha', { vendor: 'claude', cmd: 'claude --model claude-opus-4-8 --effort high', resumeToken: 'tok-abc' }));
  assert.deepEqual(
    await store().setBackendTarget('alpha', { vendor: 'codex', cmd: 'codex --model gpt-5-codex', modelId: '' }),
    { found: true, changed: true },
  );
  const s = store().findSession('alpha');
  assert.equal(s?.vendor, 'codex');
  assert.equal(s?.cmd, 'codex --model gpt-5-codex');
  assert.equal(s?.resumeToken ?? '', '');
  assert.deepEqual(
    await store().setBackendTarget('ghost', { vendor: 'codex', cmd: 'x', modelId: '' }),
    { found: false, changed: false },
  );
});

test('TestSetBudgetWritesAllFieldsAndPersists: setBudget writes all four caps and the reason; a ghost is found:false', async (t) => {
  const { store, reload } = await fresh(t);
  await store().addSession(newSession('alpha', { cost_cap: 5, paused_reason: 'cost' }));
  const budget = { cost_cap: 20, token_cap: 1000, cohort_cost_cap: 30, cohort_token_cap: 2000, paused_reason: '' };
  assert.deepEqual(await store().setBudget('alpha', budget), { found: true, changed: true });
  for (const s of [store().findSession('alpha'), (await reload()).findSession('alpha')]) {
    assert.equal(s?.cost_cap, 20);
    assert.equal(s?.token_cap, 1000);
    assert.equal(s?.cohort_cost_cap, 30);
    assert.equal(s?.cohort_token_cap, 2000);
    assert.equal(s?.paused_reason ?? '', '');
  }
  assert.deepEqual(await store().setBudget('ghost', budget), { found: false, changed: false });
});

test('TestIsLegacy: rows keep what IsLegacy reads: a channel without gateways is legacy, with gateways or no channel it is not', async (t) => {
  const { store, reload } = await fresh(t);
  await store().addSession(newSession('legacy', { channelID: 'c1' }));
  await store().addSession(newSession('bound', { channelID: 'c1', gateways: ['chat'] }));
  await store().addSession(newSession('bare'));
  const s = await reload();
  const isLegacy = (name: string): boolean => {
    const row = s.findSession(name);
    return (row?.gateways?.length ?? 0) === 0 && (row?.channelID ?? '') !== '';
  };
  assert.equal(isLegacy('legacy'), true);
  assert.equal(isLegacy('bound'), false);
  assert.equal(isLegacy('bare'), false);
});
