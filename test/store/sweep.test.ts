// Temp files a crash can leave (Go's fixed `<file>.tmp`, write-file-atomic's `<file>.<n>` and
// `<file>.<n>.<n>` when a link at the file is replaced, our
// compaction's `.compact`) are swept when the store opens, under the lock; nothing else is.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
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
  assert.deepEqual(readdirSync(dir).sort(), ['.herrscher-state', 'notes.tmp', 'participants', 'state.json', 'state.json.1.x', 'state.json.bak', 'transcripts']);
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

test('a temp file that cannot be removed is logged with the action, the name and the errno, relative to the state dir', async (t) => {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'transcripts'), { recursive: true });
  writeFileSync(path.join(dir, 'transcripts/s.jsonl.7'), 'x');
  const errors: { message: string; err: unknown }[] = [];
  const io = withIo({
    unlink: async (file) => {
      if (file.endsWith('.jsonl.7')) throw errno('EACCES', 'unlink');
      return nodeIo.unlink(file);
    },
  });
  const store = await openIn(dir, { io, error: (message, err) => errors.push({ message, err }) });
  t.after(() => store.close());
  assert.equal(errors.length, 1, errors.map((e) => e.message).join('\n'));
  assert.equal((errors[0]?.err as Error).message, 'remove transcripts/s.jsonl.7: EACCES: permission denied');
});

test('a temp file someone else removed first (ENOENT) is no error: nothing is logged and the store opens', async (t) => {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'state.json.tmp'), 'x');
  mkdirSync(path.join(dir, 'transcripts'), { recursive: true });
  writeFileSync(path.join(dir, 'transcripts/s.jsonl.tmp'), 'x');
  const messages: string[] = [];
  const io = withIo({
    unlink: async (file) => {
      if (/\.tmp$/.test(file)) {
        await nodeIo.unlink(file);
        throw errno('ENOENT', 'unlink');
      }
      return nodeIo.unlink(file);
    },
  });
  const store = await openIn(dir, { io, warn: (m) => messages.push(m), error: (m) => messages.push(m) });
  t.after(() => store.close());
  assert.deepEqual(messages, []);
  assert.deepEqual(readdirSync(path.join(dir, 'transcripts')), []);
});

test('only names that END as a temp name are swept: a longer name that merely contains one is kept', async (t) => {
  const dir = tempDir();
  const put = (rel: string): void => {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), 'keep');
  };
  const kept = ['state.json.tmp.bak', 'state.json.12.orig', 'transcripts/s.jsonl.tmp.bak', 'transcripts/s.jsonl.compact~', 'transcripts/s.jsonl.12.orig', '.herrscher-state/transcripts/s.json.12.orig', '.herrscher-state/transcripts/s.summary.12.bak'];
  for (const rel of kept) put(rel);
  put('.herrscher-state/transcripts/s.summary.12'); // a temp name: swept
  const store = await openIn(dir);
  t.after(() => store.close());
  for (const rel of kept) assert.ok(existsSync(path.join(dir, rel)), `${rel} kept`);
  assert.equal(existsSync(path.join(dir, '.herrscher-state/transcripts/s.summary.12')), false);
});

test('a folder that cannot be listed is logged at error by name, its temp files stay, and the store still opens', async (t) => {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'transcripts'), { recursive: true });
  writeFileSync(path.join(dir, 'transcripts/s.jsonl.tmp'), 'x');
  writeFileSync(path.join(dir, 'state.json.tmp'), 'x');
  const errors: { message: string; err: unknown }[] = [];
  const io = withIo({
    readdir: async (d) => {
      if (path.basename(d) === 'transcripts' || d === dir) throw errno('EACCES', 'scandir');
      return nodeIo.readdir(d);
    },
  });
  const store = await openIn(dir, { io, error: (message, err) => errors.push({ message, err }) });
  t.after(() => store.close());
  const said = errors.map((e) => `${e.message} | ${(e.err as Error | undefined)?.message}`);
  assert.ok(said.includes('temp files in the state dir not swept | list .: EACCES: permission denied'), said.join('\n'));
  assert.ok(said.includes('temp files in transcripts not swept | list transcripts: EACCES: permission denied'), said.join('\n'));
  assert.ok(existsSync(path.join(dir, 'transcripts/s.jsonl.tmp')) && existsSync(path.join(dir, 'state.json.tmp')));
});

test("the side folder's own temp files (marks, adoption marker, a link's replace) are swept by their whole name, nothing else", async (t) => {
  const dir = tempDir();
  const put = (rel: string): void => {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), 'x');
  };
  const swept = ['.herrscher-state/high-water.json.12', '.herrscher-state/high-water.json.12.34', '.herrscher-state/adopted-shared-side-files.56', '.herrscher-state/transcripts/s.json.12.34'];
  const kept = ['.herrscher-state/old-high-water.json.12', '.herrscher-state/high-water.json.12.bak', '.herrscher-state/high-water.json.12.34.56'];
  for (const rel of [...swept, ...kept]) put(rel);
  const store = await openIn(dir);
  t.after(() => store.close());
  for (const rel of swept) assert.equal(existsSync(path.join(dir, rel)), false, `${rel} swept`);
  for (const rel of kept) assert.ok(existsSync(path.join(dir, rel)), `${rel} kept`);
});
