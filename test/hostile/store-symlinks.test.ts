// Hostile files: the store opens nothing through a symbolic link inside the state dir. A link
// planted where the store keeps a file (lock, state.json, wal.log, a transcript, a journal, a
// temp file) or a folder (transcripts/, participants/, .herrscher-state/) is refused or replaced,
// never followed: the bait it points at keeps its bytes and nothing appears beside it.
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo } from '../../src/store/io.js';
import { confine } from '../../src/store/state-dir.js';
import { newSession, openIn, storeError } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const BAIT = 'bait: must never change\n';
const entry = { ts: 't1', role: 'user', text: 'x' };

/** A state dir and, beside it, a bait file and an empty bait folder the links point at. */
function setup(): { dir: string; bait: string; baitDir: string; intact(): void } {
  const root = tempDir();
  const dir = path.join(root, 'state');
  mkdirSync(dir, { mode: 0o700 });
  const bait = path.join(root, 'bait');
  writeFileSync(bait, BAIT);
  const baitDir = path.join(root, 'bait-dir');
  mkdirSync(baitDir);
  return {
    dir, bait, baitDir,
    intact() {
      assert.equal(readFileSync(bait, 'utf8'), BAIT, 'the bait file was written through a link');
      assert.deepEqual(readdirSync(baitDir), [], 'something was created through a linked folder');
    },
  };
}

/** A state dir with session "a" (and its files), closed, for planting links before the next open. */
async function withSession(dir: string): Promise<void> {
  const store = await openIn(dir);
  await store.addSession(newSession('a'));
  await store.close();
}

test('a link at the server lock file is not followed: open refuses (ELOOP) and the bait keeps its bytes', async () => {
  const s = setup();
  mkdirSync(path.join(s.dir, '.herrscher-state'));
  symlinkSync(s.bait, path.join(s.dir, '.herrscher-state', 'server.lock'));
  await assert.rejects(() => openIn(s.dir), /ELOOP|symbolic link/);
  s.intact();
});

test('a link at state.json is not read through: open refuses (io, ELOOP)', async () => {
  const s = setup();
  writeFileSync(s.bait, '{"sessions":[{"name":"planted"}]}');
  symlinkSync(s.bait, statePathIn(s.dir));
  await assert.rejects(() => openIn(s.dir), storeError('io', ['state.json', 'ELOOP'], 'ELOOP'));
  assert.equal(readFileSync(s.bait, 'utf8'), '{"sessions":[{"name":"planted"}]}');
});

test('a link at .herrscher-state/wal.log is not followed: open refuses and the bait keeps its bytes', async () => {
  const s = setup();
  mkdirSync(path.join(s.dir, '.herrscher-state'));
  symlinkSync(s.bait, path.join(s.dir, '.herrscher-state', 'wal.log'));
  await assert.rejects(() => openIn(s.dir), /ELOOP/);
  s.intact();
});

test('a linked .herrscher-state folder is not entered: open refuses and nothing is created in its target', async () => {
  const s = setup();
  symlinkSync(s.baitDir, path.join(s.dir, '.herrscher-state'));
  await assert.rejects(() => openIn(s.dir), /ELOOP/);
  s.intact();
});

test('a link at a transcript is not followed: append and read refuse (ELOOP) and the bait keeps its bytes', async (t) => {
  const s = setup();
  await withSession(s.dir);
  mkdirSync(path.join(s.dir, 'transcripts'));
  symlinkSync(s.bait, path.join(s.dir, 'transcripts', 'a.jsonl'));
  const store = await openIn(s.dir);
  t.after(() => store.close());
  await assert.rejects(() => store.appendTranscript('a', entry), storeError('io', ['transcripts/a.jsonl', 'ELOOP'], 'ELOOP'));
  await assert.rejects(() => store.readTranscript('a', 0), storeError('io', ['transcripts/a.jsonl', 'ELOOP'], 'ELOOP'));
  s.intact();
});

test('a linked transcripts folder is not entered: append refuses (ELOOP) and nothing is created in its target', async (t) => {
  const s = setup();
  await withSession(s.dir);
  symlinkSync(s.baitDir, path.join(s.dir, 'transcripts'));
  const store = await openIn(s.dir);
  t.after(() => store.close());
  await assert.rejects(() => store.appendTranscript('a', entry), storeError('io', ['transcripts/a.jsonl', 'ELOOP'], 'ELOOP'));
  s.intact();
});

test('a link at a participants journal, or a linked participants folder, is not followed', async (t) => {
  const s = setup();
  await withSession(s.dir);
  mkdirSync(path.join(s.dir, 'participants'));
  symlinkSync(s.bait, path.join(s.dir, 'participants', 'a.log'));
  let store = await openIn(s.dir);
  await assert.rejects(() => store.appendParticipant('a', 'u1'), storeError('io', ['participants/a.log', 'ELOOP'], 'ELOOP'));
  await assert.rejects(() => store.readParticipants('a'), storeError('io', ['participants/a.log', 'ELOOP'], 'ELOOP'));
  await store.close();
  s.intact();
  await import('node:fs/promises').then((fs) => fs.rm(path.join(s.dir, 'participants'), { recursive: true }));
  symlinkSync(s.baitDir, path.join(s.dir, 'participants'));
  store = await openIn(s.dir);
  t.after(() => store.close());
  await assert.rejects(() => store.appendParticipant('a', 'u1'), storeError('io', ['participants/a.log', 'ELOOP'], 'ELOOP'));
  s.intact();
});

test('a link at the compaction temp file is not followed: compaction replaces the transcript and the bait keeps its bytes', async (t) => {
  const s = setup();
  await withSession(s.dir);
  const store = await openIn(s.dir);
  t.after(() => store.close());
  await store.appendTranscript('a', entry);
  symlinkSync(s.bait, path.join(s.dir, 'transcripts', 'a.jsonl.compact'));
  // One entry past the 4 MiB trigger: the append that makes the file larger compacts it.
  await store.appendTranscript('a', { ts: 't2', role: 'user', text: 'y'.repeat(4 * 1024 * 1024) });
  s.intact();
  assert.deepEqual((await store.readTranscriptPage('a', {})).firstSeq, 1, 'compaction ran and kept only the newest entry');
});

test('writeAtomic over a link replaces the link with the file and leaves the link\'s target alone', async () => {
  const s = setup();
  const target = path.join(s.dir, 'state.json');
  symlinkSync(s.bait, target);
  await nodeIo.writeAtomic(target, '{"x":1}', { mode: 0o600, sync: true });
  assert.equal(lstatSync(target).isSymbolicLink(), false);
  assert.equal(readFileSync(target, 'utf8'), '{"x":1}');
  assert.equal(lstatSync(target).mode & 0o777, 0o600);
  s.intact();
});

test('the store\'s confined io refuses a path that leads outside the state dir (EPERM) and touches nothing there', async () => {
  const s = setup();
  const io = confine(nodeIo, s.dir);
  const outside = path.join(s.dir, '..', 'bait');
  await assert.rejects(() => io.open(outside, 'a', 0o600), { code: 'EPERM' });
  await assert.rejects(() => io.writeAtomic(outside, 'x', { mode: 0o600, sync: false }), { code: 'EPERM' });
  await assert.rejects(() => io.unlink(outside), { code: 'EPERM' });
  await assert.rejects(() => io.mkdir(path.join(s.baitDir, 'x'), 0o700), { code: 'EPERM' });
  s.intact();
});
