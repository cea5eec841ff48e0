// Temp files a crash can leave (Go's fixed `<file>.tmp`, write-file-atomic's `<file>.<n>` and
// `<file>.<n>.<n>` when a link at the file is replaced, our
// compaction's `.compact`) are swept when the store opens, under the lock; nothing else is.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo, withIo } from '../../src/store/io.js';
import { errno, openIn } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

test('opening the store removes leftover temp files of state.json and transcripts, and keeps every other file', async (t) => {
  const dir = tempDir();
  const put = (rel: string, content = 'x'): void => {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), content);
  };
  put('state.json', '{}');
  for (const rel of ['state.json.tmp', 'state.json.2718281828', 'state.json.27.18', 'transcripts/s.jsonl.tmp', 'transcripts/s.jsonl.31415', 'transcripts/s.jsonl.31.415', 'transcripts/s.jsonl.compact', '.herrscher-state/transcripts/s.json.42', '.herrscher-state/transcripts/s.json.4.2', '.herrscher-state/high-water.json.7', '.herrscher-state/high-water.json.7.1']) put(rel);
  for (const rel of ['state.json.bak', 'state.json.1.x', 'notes.tmp', 'transcripts/s.jsonl', 'transcripts/other.txt', 'participants/s.log', 'participants/s.log.tmp']) put(rel);
  const store = await openIn(dir);
  t.after(() => store.close());
  assert.deepEqual(readdirSync(dir).sort(), ['.herrscher-state', '.state.json.lock', 'notes.tmp', 'participants', 'state.json', 'state.json.1.x', 'state.json.bak', 'transcripts']);
  assert.deepEqual(readdirSync(path.join(dir, 'transcripts')).sort(), ['other.txt', 's.jsonl']);
  assert.deepEqual(readdirSync(path.join(dir, 'participants')).sort(), ['s.log', 's.log.tmp']);
  assert.deepEqual(readdirSync(path.join(dir, '.herrscher-state', 'transcripts')), []);
  assert.deepEqual(readdirSync(path.join(dir, '.herrscher-state')).filter((n) => /\.\d+$/.test(n)), [], 'the side folder\'s temp files are swept');
  assert.deepEqual(store.getState(), { home: { id: '', type: '' }, sessions: null });
  assert.equal(statePathIn(dir), store.statePath);
});

test('a temp file that cannot be removed does not stop the store from opening, and is logged at error by name', async (t) => {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'transcripts'), { recursive: true });
  writeFileSync(path.join(dir, 'transcripts/s.jsonl.compact'), 'x');
  const errors: string[] = [];
  const io = withIo({
    unlink: async (file) => {
      if (file.endsWith('.compact')) throw errno('EACCES', 'unlink');
      return nodeIo.unlink(file);
    },
  });
  const store = await openIn(dir, { io, error: (m) => errors.push(m) });
  t.after(() => store.close());
  assert.ok(errors.some((e) => e.includes('transcripts/s.jsonl.compact not swept')), errors.join('\n'));
  assert.deepEqual(readdirSync(path.join(dir, 'transcripts')), ['s.jsonl.compact']);
});
