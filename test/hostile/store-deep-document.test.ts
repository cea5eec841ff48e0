// Hostile files: a state.json nested far deeper than any real one is refused with a message that
// names the file and the rule, not a bare "Maximum call stack size exceeded"; and nothing the store
// accepts can be nested deeper than it can write back and read again.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { MAX_DOCUMENT_DEPTH } from '../../src/store/go-decode.js';
import { encodeStateDocument, UnsupportedValueError } from '../../src/store/go-json.js';
import { newSession, openIn, reopen, storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const deepArray = (levels: number): string => '['.repeat(levels) + ']'.repeat(levels);
const deepObject = (levels: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = { k: v };
  return v;
};

test('a state.json with an unknown field nested 100 000 deep is refused naming state.json and the depth rule', async () => {
  const dir = tempDir();
  const text = `{"sessions":[{"name":"a","deep":${deepArray(100_000)}}]}`;
  writeFileSync(statePathIn(dir), text);
  await assert.rejects(() => openIn(dir), storeError('invalid-input', ['state.json', `at most ${MAX_DOCUMENT_DEPTH}`]));
  assert.equal(readFileSync(statePathIn(dir), 'utf8'), text, 'the file is left as it was');
});

test('a state.json nested exactly to the limit loads, is rewritten and loads again', async (t) => {
  const dir = tempDir();
  // state object, sessions array and row object are 3 levels; the field takes the rest.
  const text = `{"sessions":[{"name":"a","incarnation":"inc_${'A'.repeat(26)}","deep":${deepArray(MAX_DOCUMENT_DEPTH - 3)}}]}`;
  writeFileSync(statePathIn(dir), text);
  let store = await openIn(dir);
  t.after(() => store.close());
  assert.ok(store.findSession('a'));
  await store.addSession(newSession('b'));
  store = await reopen(store);
  assert.deepEqual(store.listSessions().map((s) => s.name), ['a', 'b']);
});

test('addSession refuses an unknown field nested deeper than the file may be (invalid-input naming the field)', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await assert.rejects(
    () => store.addSession({ ...newSession('a'), deep: deepObject(100_000) }),
    storeError('invalid-input', ['session.deep', `at most ${MAX_DOCUMENT_DEPTH}`]),
  );
  await assert.rejects(
    () => store.addSession({ ...newSession('a'), deep: deepObject(MAX_DOCUMENT_DEPTH - 2) }),
    storeError('invalid-input', ['session.deep']),
  );
  await store.addSession({ ...newSession('a'), deep: deepObject(MAX_DOCUMENT_DEPTH - 3) });
  assert.ok(store.findSession('a'));
});

test('the Go encoder refuses a value nested 100 000 deep as unsupported instead of overflowing the stack', () => {
  assert.throws(
    () => encodeStateDocument({ home: { id: '', type: '' }, sessions: null, deep: deepObject(100_000) }),
    (err: unknown) => err instanceof UnsupportedValueError && /nested deeper than/.test(err.message),
  );
});
