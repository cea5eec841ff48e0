// Hostile names: two names that would map to one file name are one name. A lone UTF-16
// surrogate cannot be written in a file name (the kernel gets UTF-8, where it becomes U+FFFD),
// so "a\ud800" and "a\ufffd" used to be two sessions appending to one file with overlapping seqs.
// The rule: a path-bearing method refuses a name holding a lone surrogate (invalid-name), and
// state.json's "\ud800" escapes decode to U+FFFD, as Go's decoder does, so no row can hold one.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { openIn, pathMethods, storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const LONE = ['a\ud800', '\udc00', 'x\udbffy', 'a\udfff\ud800'];


for (const [method, call] of pathMethods) {
  test(`${method} refuses a name holding a lone surrogate (invalid-name), so it cannot reach the U+FFFD file`, async (t) => {
    const dir = tempDir();
    const store = await openIn(dir);
    t.after(() => store.close());
    for (const name of LONE) {
      await assert.rejects(() => call(store, name), storeError('invalid-name', ['lone surrogate']), JSON.stringify(name));
    }
  });
}

test('a state.json row named "a\\ud800" loads as "a\\ufffd" (as Go decodes it) and owns the one file of that name', async (t) => {
  const dir = tempDir();
  // Written as escapes, the way a JSON file can carry a lone surrogate.
  writeFileSync(statePathIn(dir), `{"sessions":[{"name":"a\\ud800","incarnation":"inc_${'A'.repeat(26)}"}]}`);
  const store = await openIn(dir);
  t.after(() => store.close());
  assert.deepEqual(store.listSessions().map((s) => s.name), ['a\ufffd']);
  await store.appendTranscript('a\ufffd', { ts: 't1', role: 'user', text: 'x' });
  await assert.rejects(() => store.appendTranscript('a\ud800', { ts: 't2', role: 'user', text: 'y' }), storeError('invalid-name'));
  assert.deepEqual(readdirSync(path.join(dir, 'transcripts')), ['a\ufffd.jsonl']);
  assert.equal(readFileSync(path.join(dir, 'transcripts', 'a\ufffd.jsonl'), 'utf8'), '{"ts":"t1","role":"user","text":"x"}\n');
  assert.deepEqual((await store.readTranscriptPage('a\ufffd', {})).entries.map((e) => e.ts), ['t1']);
});
