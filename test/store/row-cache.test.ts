// The session-row encoding cache: state.json re-encodes only the rows a commit
// replaced, and the bytes stay exactly what a full encode writes (the goldens pin those).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { encodeStateDocument, encodeStateDocumentBytes } from '../../src/store/go-json.js';
import { RowCache } from '../../src/store/row-cache.js';
import { nodeIo } from '../../src/store/io.js';
import type { Doc } from '../../src/store/state-document.js';
import { addSession, emptyDocument, patchSession, removeSession, setHome, setTopField } from '../../src/store/state-document.js';
import { StateStore } from '../../src/store/state-store.js';

const special = fc.constantFrom('<', '&', '\u2028', '"', '\\', '\n', '\u0000', '😀', 'é', '\ud800');
const str = fc.string({ unit: fc.oneof(special, fc.string({ minLength: 1, maxLength: 1 })), maxLength: 12 });
const name = fc.constantFrom('a', 'b', 'c', 'd', 'e');

type Step = (doc: Doc) => Doc;
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ name, cmd: str, dir: str }).map((s) => (doc: Doc) =>
    doc.sessions?.some((r) => r.name === s.name) ? doc : addSession(doc, { name: s.name, channelID: '1', type: 'text', cmd: s.cmd, dir: s.dir }).doc),
  name.map((n) => (doc: Doc) => removeSession(doc, n).doc),
  fc.record({ name, resumeToken: str, paused_reason: str, archived: fc.boolean() }).map((p) => (doc: Doc) =>
    patchSession(doc, p.name, { resumeToken: p.resumeToken, paused_reason: p.paused_reason, archived: p.archived }).doc),
  str.map((s) => (doc: Doc) => setTopField(doc, 'workspace', s).doc),
  fc.record({ id: str, type: str }).map((h) => (doc: Doc) => setHome(doc, h).doc),
);

test('after any mutation sequence, the cached encoding equals a fresh full encode', () => {
  fc.assert(
    fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
      const cache = new RowCache();
      let doc = emptyDocument();
      for (const s of steps) {
        doc = s(doc);
        assert.equal(encodeStateDocumentBytes(doc, cache).toString('utf8'), encodeStateDocument(doc));
      }
    }),
    { numRuns: 200 },
  );
});

test('a replaced row is re-encoded; an unchanged row object is not', () => {
  const cache = new RowCache();
  let doc = emptyDocument();
  for (const n of ['a', 'b']) doc = addSession(doc, { name: n, channelID: '1', type: 'text', cmd: 'c' }).doc;
  const before = encodeStateDocumentBytes(doc, cache).toString('utf8');
  doc = patchSession(doc, 'a', { resumeToken: 'tok-1' }).doc;
  const after = encodeStateDocumentBytes(doc, cache).toString('utf8');
  assert.match(after, /"resumeToken": "tok-1"/);
  assert.equal(after, encodeStateDocument(doc));
  // Row b is the same object as before the patch: its text comes from the cache. Changing it in
  // place (which the store never does) shows that: the cached text still has the old command.
  const b = doc.sessions?.[1] as Record<string, unknown>;
  b.cmd = 'changed in place';
  const reused = encodeStateDocumentBytes(doc, cache).toString('utf8');
  assert.doesNotMatch(reused, /changed in place/);
  assert.match(encodeStateDocument(doc), /changed in place/);
  assert.notEqual(before, after);
});

test('a cache refuses a second layout rather than hand out text indented for another', () => {
  const cache = new RowCache();
  cache.get({}, 'x', () => '');
  assert.equal(cache.get({}, 'x', () => 'new row').toString(), 'new row');
  assert.throws(() => cache.get({}, 'y', () => ''), /two layouts/);
});

test('state.json after a burst of concurrent mutations is the full encode of the committed document', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hs-row-cache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'state.json');
  const store = await StateStore.load(nodeIo, file, 'write');
  await Promise.all(['a', 'b', 'c'].map((n) => store.mutate((d) => addSession(d, { name: n, channelID: '1', type: 'text', cmd: 'c' }))));
  const patches = [];
  for (let i = 0; i < 20; i++) patches.push(store.mutate((d) => patchSession(d, ['a', 'b', 'c'][i % 3] as string, { resumeToken: `t${i}` })));
  await Promise.all(patches);
  const text = readFileSync(file, 'utf8');
  assert.equal(text, encodeStateDocument(store.document));
  assert.match(text, /"resumeToken": "t19"/);
});

test('over many rows, any mix of replaced, removed, added and reordered rows encodes as a fresh full encode', () => {
  const base = (() => {
    let d = emptyDocument();
    for (let k = 0; k < 40; k++) d = addSession(d, { name: `r${k}`, channelID: '1', type: 'text', cmd: `c${k}` }).doc;
    return d;
  })();
  const edit = fc.oneof(
    fc.record({ at: fc.nat(60), token: str }).map((e) => (doc: Doc) => {
      const rows = doc.sessions ?? [];
      const row = rows[e.at % Math.max(1, rows.length)];
      return row ? patchSession(doc, row.name, { resumeToken: e.token }).doc : doc;
    }),
    fc.nat(60).map((at) => (doc: Doc) => {
      const rows = doc.sessions ?? [];
      const row = rows[at % Math.max(1, rows.length)];
      return row ? removeSession(doc, row.name).doc : doc;
    }),
    fc.nat(1000).map((n) => (doc: Doc) =>
      doc.sessions?.some((r) => r.name === `n${n}`) ? doc : addSession(doc, { name: `n${n}`, channelID: '1', type: 'text', cmd: 'c' }).doc),
    // A whole-document save may hand back the same row objects in another order.
    fc.tuple(fc.nat(60), fc.nat(60)).map(([a, b]) => (doc: Doc) => {
      const rows = [...(doc.sessions ?? [])];
      if (rows.length < 2) return doc;
      const i = a % rows.length;
      const k = b % rows.length;
      [rows[i], rows[k]] = [rows[k] as (typeof rows)[number], rows[i] as (typeof rows)[number]];
      return { ...doc, sessions: rows };
    }),
  );
  fc.assert(
    fc.property(fc.array(fc.array(edit, { minLength: 1, maxLength: 4 }), { maxLength: 12 }), (commits) => {
      const cache = new RowCache();
      let doc = base;
      assert.equal(encodeStateDocumentBytes(doc, cache).toString('utf8'), encodeStateDocument(doc));
      for (const commit of commits) {
        for (const e of commit) doc = e(doc);
        assert.equal(encodeStateDocumentBytes(doc, cache).toString('utf8'), encodeStateDocument(doc));
      }
    }),
    { numRuns: 300 },
  );
});

test('a commit that replaces one row of 100 encodes that row only and keeps the others\' bytes', () => {
  let doc = emptyDocument();
  for (let k = 0; k < 100; k++) doc = addSession(doc, { name: `r${k}`, channelID: '1', type: 'text', cmd: `c${k}` }).doc;
  const cache = new RowCache();
  encodeStateDocumentBytes(doc, cache);
  doc = patchSession(doc, 'r50', { resumeToken: 'tok' }).doc;
  let encoded = 0;
  const rows = doc.sessions ?? [];
  const sep = Buffer.from(',\n    ');
  const block = cache.block(rows, { layout: '  |    ', sep }, () => {
    encoded++;
    return '{"changed": true}';
  });
  // One row is new (r50's replacement, not in the last block): encoded once; the 99 others are
  // the last block's bytes, their text unchanged around it.
  assert.equal(encoded, 1);
  const text = block.toString('utf8');
  assert.equal(text.match(/"name": "r\d+"/g)?.length, 99);
  assert.ok(text.startsWith('{\n      "id": "s_r0"'));
  assert.match(text, /"cmd": "c49"[\s\S]*\{"changed": true\}[\s\S]*"cmd": "c51"/);
});

test('a block stays as it was while the next one is built, and its buffer is used again for the one after', () => {
  let doc = emptyDocument();
  for (let k = 0; k < 20; k++) doc = addSession(doc, { name: `r${k}`, channelID: '1', type: 'text', cmd: `c${k}` }).doc;
  const cache = new RowCache();
  const layout = { layout: '  |    ', sep: Buffer.from(',\n    ') };
  const encode = (r: object): string => JSON.stringify(r);
  const first = cache.block(doc.sessions ?? [], layout, encode);
  const firstText = first.toString('utf8');
  doc = patchSession(doc, 'r3', { resumeToken: 'one' }).doc;
  const second = cache.block(doc.sessions ?? [], layout, encode);
  assert.equal(first.toString('utf8'), firstText, 'the block before the last is untouched by the last one');
  assert.match(second.toString('utf8'), /"resumeToken":"one"/);
  doc = patchSession(doc, 'r3', { resumeToken: 'two' }).doc;
  const third = cache.block(doc.sessions ?? [], layout, encode);
  assert.equal(third.buffer, first.buffer, 'built where the first one was: no new buffer per commit');
  assert.match(third.toString('utf8'), /"resumeToken":"two"/);
  assert.match(second.toString('utf8'), /"resumeToken":"one"/, 'the last block stays as it was');
});
