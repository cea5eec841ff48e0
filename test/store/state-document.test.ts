// state.json beyond the Go suite: the probes' load cases and backfills and
// the Go defects we fix (docs/go-compatibility.md): no-op writes, the defaults overlay, unknown
// fields kept, values the file cannot hold refused.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { Store } from '../../src/store/store.js';
import { countingIo, newSession, openIn, reopen, snapshot, storeError, text } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const EMPTY_STATE = '{\n  "home": {\n    "id": "",\n    "type": ""\n  },\n  "sessions": null\n}';
const INC_A = `inc_${'A'.repeat(26)}`;
const INC_B = `inc_${'B'.repeat(26)}`;

/** Writes state.json, then expects Store.open to refuse it and to leave it exactly as it was. */
async function refusedAtLoad(content: string, parts: string[]): Promise<void> {
  const dir = tempDir();
  const file = statePathIn(dir);
  writeFileSync(file, content);
  const before = snapshot(file);
  const { io, calls } = countingIo();
  await assert.rejects(() => Store.open(file, { io }), storeError('invalid-input', ['state.json', ...parts]));
  assert.deepEqual(snapshot(file), before, 'the file is left untouched');
  assert.equal(calls.writeAtomic, 0);
  const reopened = await Store.open(file, { lock: true }).catch((err: unknown) => err);
  assert.ok(!(reopened instanceof Store), 'still refused: nothing was repaired');
  assert.deepEqual(readdirSync(dir).sort(), ['state.json'], 'the lock was released and nothing else written');
}

// ---- loading -----------------------------------------------------------------------------

test('an empty state.json is refused at load as Go refuses it (unexpected end of JSON input) and left untouched', async () => {
  await refusedAtLoad('', ['unexpected end of JSON input']);
});

test('a state.json holding [] is refused at load and left untouched', async () => {
  await refusedAtLoad('[]', ['must be an object, got array']);
});

test('invalid JSON in state.json is refused naming the file, and left untouched', async () => {
  await refusedAtLoad('{"sessions":[{"name":"a",}]}', ['invalid JSON', 'position 25']);
});

test('a state.json with token_cap 18446744073709551615 (Go\'s uint64 max) loads exactly and a rewrite keeps it', async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), '{"sessions":[{"name":"a","incarnation":"inc_AAAAAAAAAAAAAAAAAAAAAAAAAA","token_cap":18446744073709551615}]}');
  const store = await openIn(dir);
  t.after(() => store.close());
  assert.equal(store.findSession('a')?.token_cap, 18446744073709551615n);
  await store.setArchived('a', true);
  assert.match(readFileSync(statePathIn(dir), 'utf8'), /"token_cap": 18446744073709551615\n/);
});

test('state.json holding null or {} opens as an empty state and is not rewritten', async () => {
  for (const content of ['null', '{}']) {
    const dir = tempDir();
    writeFileSync(statePathIn(dir), content);
    const before = snapshot(statePathIn(dir));
    const store = await openIn(dir);
    assert.deepEqual(store.getState(), { home: { id: '', type: '' }, sessions: null });
    await store.close();
    assert.deepEqual(snapshot(statePathIn(dir)), before, content);
  }
});

test('a state.json that is a directory is refused with kind io, EISDIR and no absolute path in the message', async () => {
  const dir = tempDir();
  mkdirSync(statePathIn(dir));
  await assert.rejects(() => openIn(dir), (err: unknown) => {
    storeError('io', ['read state.json: EISDIR'], 'EISDIR')(err);
    assert.ok(!(err as Error).message.includes(dir), 'no absolute path');
    return true;
  });
});

test('ids are backfilled in file order as s_<name>, s_<name>_1, s_<name>_2 while taken', async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), JSON.stringify({
    sessions: [{ name: 'a', incarnation: INC_A }, { id: 's_a', name: 'x', incarnation: INC_B }, { name: 'a', incarnation: `inc_${'C'.repeat(26)}` }],
  }));
  const store = await openIn(dir);
  t.after(() => store.close());
  assert.deepEqual(store.listSessions().map((s) => s.id), ['s_a_1', 's_a', 's_a_2']);
});

test('duplicate non-empty ids in the file are not repaired, as Go', async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), JSON.stringify({
    sessions: [{ id: 's_x', name: 'a', incarnation: INC_A }, { id: 's_x', name: 'b', incarnation: INC_B }],
  }));
  const store = await openIn(dir);
  t.after(() => store.close());
  assert.deepEqual(store.listSessions().map((s) => s.id), ['s_x', 's_x']);
});

test('an id-only backfill stays in memory: state.json is not written', async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), JSON.stringify({ sessions: [{ name: 'q', incarnation: INC_A }] }));
  const before = snapshot(statePathIn(dir));
  const { io, calls } = countingIo();
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  assert.equal(store.findSession('q')?.id, 's_q');
  assert.equal(calls.writeAtomic, 0);
  assert.deepEqual(snapshot(statePathIn(dir)), before);
  assert.ok(!text(statePathIn(dir)).includes('s_q'));
});

test('a repeated incarnation is replaced for the later row at load, and the repair is persisted at once', async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), JSON.stringify({
    sessions: [{ id: 's_a', name: 'a', incarnation: INC_A }, { id: 's_b', name: 'b', incarnation: INC_A }],
  }));
  const store = await openIn(dir);
  t.after(() => store.close());
  const [a, b] = store.listSessions();
  assert.equal(a?.incarnation, INC_A);
  assert.match(b?.incarnation ?? '', /^inc_[A-Z2-7]{26}$/);
  assert.notEqual(b?.incarnation, INC_A);
  const disk = JSON.parse(text(statePathIn(dir))) as { sessions: { incarnation: string }[] };
  assert.deepEqual(disk.sessions.map((s) => s.incarnation), [INC_A, b?.incarnation]);
});

test('addSession keeps a caller\'s id even when another row has it, and derives s_s_a for a session named s_a', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('x', { id: 's_a' }));
  assert.equal((await store.addSession(newSession('a'))).id, 's_a_1');
  assert.equal((await store.addSession(newSession('b', { id: 's_a' }))).id, 's_a');
  assert.equal((await store.addSession(newSession('s_a'))).id, 's_s_a');
});

// ---- bytes of state.json -----------------------------------------------------------------

test('clearing the only field of a fresh state writes exactly Go\'s empty-state bytes, mode 0600', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.setInstanceID('x');
  assert.deepEqual(await store.setInstanceID(''), { changed: true });
  assert.equal(text(statePathIn(dir)), EMPTY_STATE);
  assert.equal(statSync(statePathIn(dir)).mode & 0o777, 0o600);
});

test('removing the last session writes "sessions": [] where a never-used state has null', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  assert.deepEqual(await store.removeSession('a'), { removed: true });
  assert.equal(text(statePathIn(dir)), '{\n  "home": {\n    "id": "",\n    "type": ""\n  },\n  "sessions": []\n}');
  assert.deepEqual(store.listSessions(), []);
});

test('unknown fields of the document and of session rows survive a rewrite (Go drops them; fixed)', async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), JSON.stringify({
    future: { nested: [1, 'two'] },
    home: { id: 'h', type: 'category' },
    sessions: [{ id: 's_a', incarnation: INC_A, name: 'a', channelID: 'c', type: 'text', cmd: 'x', color: 'blue', limits: { rpm: 3 } }],
    flag: true,
  }));
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.setResumeToken('a', 'tok');
  assert.equal(text(statePathIn(dir)), [
    '{',
    '  "home": {', '    "id": "h",', '    "type": "category"', '  },',
    '  "sessions": [', '    {',
    '      "id": "s_a",', `      "incarnation": "${INC_A}",`, '      "name": "a",', '      "channelID": "c",',
    '      "type": "text",', '      "cmd": "x",', '      "resumeToken": "tok",', '      "color": "blue",',
    '      "limits": {', '        "rpm": 3', '      }',
    '    }', '  ],',
    '  "future": {', '    "nested": [', '      1,', '      "two"', '    ]', '  },',
    '  "flag": true',
    '}',
  ].join('\n'));
  const again = await reopen(store);
  t.after(() => again.close());
  assert.equal(again.findSession('a')?.color, 'blue');
  assert.deepEqual((again.getState() as Record<string, unknown>).future, { nested: [1, 'two'] });
});

// ---- a mutation that changes nothing writes nothing (Go saves anyway; fixed) -------------

const noops: [string, (s: Store) => Promise<unknown>, unknown][] = [
  ['setHome with the same home', (s) => s.setHome({ id: 'h', type: 'category' }), { changed: false }],
  ['setWorkspace with the same path', (s) => s.setWorkspace('/ws'), { changed: false }],
  ['setSource with the same path', (s) => s.setSource('/src'), { changed: false }],
  ['setStatusMessageID with the same id', (s) => s.setStatusMessageID('m1'), { changed: false }],
  ['setInstanceID with the same id', (s) => s.setInstanceID('inst'), { changed: false }],
  ['removeSession of a missing name', (s) => s.removeSession('ghost'), { removed: false }],
  ['setResumeToken with the same token', (s) => s.setResumeToken('a', 'tok'), { found: true, changed: false }],
  ['setPausedReason with the same reason', (s) => s.setPausedReason('a', 'cost'), { found: true, changed: false }],
  ['setArchived(false) of a session never archived', (s) => s.setArchived('a', false), { found: true, changed: false }],
  ['setBudget with the same caps and reason', (s) => s.setBudget('a', { cost_cap: 5, token_cap: 100, cohort_cost_cap: 0, cohort_token_cap: 0, paused_reason: 'cost' }), { found: true, changed: false }],
  ['setBackendTarget with the same vendor, cmd, model and no token', (s) => s.setBackendTarget('b', { vendor: 'codex', cmd: 'codex', modelId: 'm' }), { found: true, changed: false }],
  ['setResumeToken of an unknown session', (s) => s.setResumeToken('ghost', 'x'), { found: false, changed: false }],
];

for (const [what, call, result] of noops) {
  test(`${what} answers ${JSON.stringify(result)} and writes nothing (Go saves anyway; fixed)`, async (t) => {
    const dir = tempDir();
    const { io, calls } = countingIo();
    const store = await openIn(dir, { io });
    t.after(() => store.close());
    await store.setHome({ id: 'h', type: 'category' });
    await store.setWorkspace('/ws');
    await store.setSource('/src');
    await store.setStatusMessageID('m1');
    await store.setInstanceID('inst');
    await store.addSession(newSession('a', { resumeToken: 'tok', paused_reason: 'cost', cost_cap: 5, token_cap: 100 }));
    await store.addSession(newSession('b', { vendor: 'codex', cmd: 'codex', modelId: 'm' }));
    const before = snapshot(statePathIn(dir));
    const doc = store.getState();
    const writes = calls.writeAtomic;
    assert.deepEqual(await call(store), result);
    assert.equal(calls.writeAtomic, writes, 'no write');
    assert.deepEqual(snapshot(statePathIn(dir)), before, 'same bytes, same inode');
    assert.equal(store.getState(), doc, 'the same document');
  });
}

test('setInstanceID("") on a fresh state answers changed:false and creates no file (Go writes the empty state; fixed)', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  assert.deepEqual(await store.setInstanceID(''), { changed: false });
  assert.equal(existsSync(statePathIn(dir)), false);
});

// ---- applyDefaults is an overlay (Go leaks it into the next save; fixed) -----------------

test('applyDefaults values are visible to reads but never written to state.json, even by a later save (fixed)', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  store.applyDefaults({ home: { id: 'cfg', type: 'category' }, workspace: '/cfg/ws', source: '/cfg/src' });
  await store.addSession(newSession('a'));
  await store.setStatusMessageID('m');
  assert.deepEqual(store.getState().home, { id: 'cfg', type: 'category' });
  assert.equal(store.workspaceRoot(), '/cfg/ws');
  assert.equal(store.sourceDir(), '/cfg/src');
  const disk = JSON.parse(text(statePathIn(dir))) as Record<string, unknown>;
  assert.deepEqual(disk.home, { id: '', type: '' });
  assert.equal(disk.workspace, undefined);
  assert.equal(disk.source, undefined);
  const again = await reopen(store);
  t.after(() => again.close());
  assert.deepEqual(again.getState().home, { id: '', type: '' }, 'a defaults change takes effect at the next start');
});

test('a value set in the file wins over applyDefaults, and setting it persists only the set value', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  store.applyDefaults({ workspace: '/cfg/ws' });
  assert.deepEqual(await store.setWorkspace('/mine'), { changed: true });
  assert.equal(store.workspaceRoot(), '/mine');
  assert.equal((JSON.parse(text(statePathIn(dir))) as { workspace: string }).workspace, '/mine');
  assert.deepEqual(await store.setWorkspace(''), { changed: true });
  assert.equal(store.workspaceRoot(), '/cfg/ws', 'back to the default once the file has none');
});

// ---- values the file cannot hold ---------------------------------------------------------

const badBudgets: [string, Record<string, number | bigint>, string][] = [
  ['a NaN cost_cap', { cost_cap: Number.NaN }, 'unsupported value NaN'],
  ['an infinite cohort_cost_cap', { cohort_cost_cap: Number.POSITIVE_INFINITY }, 'unsupported value Infinity'],
  ['a fractional token_cap', { token_cap: 1.5 }, 'token_cap'],
  ['a negative cohort_token_cap', { cohort_token_cap: -1 }, 'cohort_token_cap'],
  ['a token_cap of 2^53 as an inexact JS number', { token_cap: 2 ** 53 }, 'token_cap'],
  ['a cohort_token_cap past uint64', { cohort_token_cap: 2n ** 64n }, 'cohort_token_cap'],
];

for (const [what, patch, part] of badBudgets) {
  test(`setBudget with ${what} is refused as invalid-input; memory and state.json are unchanged`, async (t) => {
    const dir = tempDir();
    const { io, calls } = countingIo();
    const store = await openIn(dir, { io });
    t.after(() => store.close());
    await store.addSession(newSession('a', { cost_cap: 1 }));
    const before = snapshot(statePathIn(dir));
    const doc = store.getState();
    const writes = calls.writeAtomic;
    const budget = { cost_cap: 2, token_cap: 10, cohort_cost_cap: 3, cohort_token_cap: 20, paused_reason: '', ...patch };
    await assert.rejects(() => store.setBudget('a', budget), storeError('invalid-input', [part]));
    assert.equal(calls.writeAtomic, writes);
    assert.deepEqual(snapshot(statePathIn(dir)), before);
    assert.equal(store.getState(), doc);
    const again = await reopen(store);
    t.after(() => again.close());
    assert.equal(again.findSession('a')?.cost_cap, 1, 'the file still loads, with the old value');
  });
}

test('addSession with a NaN cost_cap is refused and adds no row', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await assert.rejects(() => store.addSession(newSession('a', { cost_cap: Number.NaN })), storeError('invalid-input', ['cost_cap', 'NaN']));
  assert.equal(store.findSession('a'), null);
  assert.equal(existsSync(statePathIn(dir)), false);
});

test('a refused value does not take down mutations queued beside it', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  const first = store.setHome({ id: 'h', type: 'category' });
  const bad = assert.rejects(
    store.setBudget('a', { cost_cap: Number.NaN, token_cap: 0, cohort_cost_cap: 0, cohort_token_cap: 0, paused_reason: '' }),
    storeError('invalid-input', ['NaN']),
  );
  const good = store.setWorkspace('/ws');
  assert.deepEqual(await first, { changed: true });
  await bad;
  assert.deepEqual(await good, { changed: true });
  const disk = JSON.parse(text(statePathIn(dir))) as { workspace: string; home: { id: string } };
  assert.equal(disk.workspace, '/ws');
  assert.equal(disk.home.id, 'h');
});

test('after close, mutations are refused with kind closed and reads still answer', async () => {
  const dir = tempDir();
  const store = await openIn(dir);
  await store.addSession(newSession('a'));
  await store.close();
  await assert.rejects(() => store.setHome({ id: 'x', type: '' }), storeError('closed', ['shutting down']));
  await assert.rejects(() => store.addSession(newSession('b')), storeError('closed'));
  await assert.rejects(() => store.appendTranscript('a', { ts: 't', role: 'user', text: 'x' }), storeError('closed'));
  assert.equal(store.findSession('a')?.name, 'a');
});
