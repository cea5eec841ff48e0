// Participants journals beyond the Go suite: Go's reading rules (TrimSpace, 64 KiB lines), the ids
// we trim or refuse where Go stores them raw (docs/go-compatibility.md, "Go defects we fix"), and concurrent appends.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Store, StoreOptions } from '../../src/store/store.js';
import { errno, newSession, openIn, storeError, text } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

/** A store with session `s` whose journal holds `content` when given (written as Go would). */
async function withJournal(t: { after(fn: () => Promise<void>): void }, content?: string, options: StoreOptions = {}): Promise<{ file: string; store: Store }> {
  const dir = tempDir();
  const file = path.join(dir, 'participants', 's.log');
  if (content !== undefined) {
    mkdirSync(path.dirname(file));
    writeFileSync(file, content);
  }
  const store = await openIn(dir, options);
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  return { file, store };
}

// ---- reading, as Go's ReadParticipants -----------------------------------------------------

test('reading trims each line with Go\'s TrimSpace (NEL and NBSP trimmed, BOM kept), skips blanks and repeats', async (t) => {
  const { store } = await withJournal(t, '\u0085u\u0085\n\ufeffv\n\n  \nw\n u \n\u00a0w\u00a0\n');
  assert.deepEqual(await store.readParticipants('s'), ['u', '\ufeffv', 'w']);
});

test('a journal line of 65 535 bytes is read; one of 65 536 ends the read there, as Go\'s bufio.Scanner', async (t) => {
  const ok = await withJournal(t, `a\n${'x'.repeat(65_535)}\nafter\n`);
  assert.deepEqual(await ok.store.readParticipants('s'), ['a', 'x'.repeat(65_535), 'after']);
  const cut = await withJournal(t, `a\n${'x'.repeat(65_536)}\nafter\n`);
  assert.deepEqual(await cut.store.readParticipants('s'), ['a'], 'ids after the long line are lost, as in Go');
});

test('a CRLF journal line reads as its id', async (t) => {
  const { store } = await withJournal(t, 'u1\r\nu2\r\n');
  assert.deepEqual(await store.readParticipants('s'), ['u1', 'u2']);
  assert.equal(await store.appendParticipant('s', 'u2'), false);
});

// ---- ids are normalised before they are appended (Go appends them raw; fixed) --------------

test('an id with surrounding spaces is stored trimmed, so " u1 " and "u1" are one participant (Go appends " u1 " twice)', async (t) => {
  const { file, store } = await withJournal(t);
  assert.equal(await store.appendParticipant('s', ' u1 '), true);
  assert.equal(await store.appendParticipant('s', 'u1'), false);
  assert.equal(await store.appendParticipant('s', ' u1 '), false);
  assert.equal(await store.appendParticipant('s', '\tu1\u0085'), false);
  assert.equal(text(file), 'u1\n');
});

const refusedIds: [string, string, string][] = [
  ['an empty id', '', 'must not be empty or blank'],
  ['a blank id (Go writes a whitespace line)', '   ', 'must not be empty or blank'],
  ['an id with LF inside (Go writes two lines)', 'u2\nu3', 'must not contain CR or LF'],
  ['an id with CR inside', 'u2\ru3', 'must not contain CR or LF'],
  ['an id of 257 characters', 'x'.repeat(257), 'must be at most 256 characters'],
];

for (const [what, id, part] of refusedIds) {
  test(`appendParticipant refuses ${what} as invalid-input and writes nothing`, async (t) => {
    const { file, store } = await withJournal(t);
    await assert.rejects(() => store.appendParticipant('s', id), storeError('invalid-input', [`userId ${part}`]));
    assert.equal(existsSync(file), false);
    assert.deepEqual(await store.readParticipants('s'), []);
  });
}

test('an id of 256 characters is accepted, counted in code points (256 emoji are 512 UTF-16 units)', async (t) => {
  const { file, store } = await withJournal(t);
  assert.equal(await store.appendParticipant('s', 'x'.repeat(256)), true);
  assert.equal(await store.appendParticipant('s', '😀'.repeat(256)), true);
  assert.deepEqual(await store.readParticipants('s'), ['x'.repeat(256), '😀'.repeat(256)]);
  assert.equal(text(file), `${'x'.repeat(256)}\n${'😀'.repeat(256)}\n`);
});

test('an id is read back exactly as appended (BOM and inner spaces kept)', async (t) => {
  const { store } = await withJournal(t);
  for (const id of ['\ufeffv', 'a b', 'ü<>&"', 'x\u2028y']) assert.equal(await store.appendParticipant('s', id), true, id);
  assert.deepEqual(await store.readParticipants('s'), ['\ufeffv', 'a b', 'ü<>&"', 'x\u2028y']);
});

// ---- concurrency -----------------------------------------------------------------------------

test('concurrent appends of one id answer added:true exactly once and write one line', async (t) => {
  const { file, store } = await withJournal(t);
  const ids = ['u1', ' u1', 'u1 ', 'u1', '\tu1', 'u1', 'u1', 'u1'];
  const added = await Promise.all(ids.map((id) => store.appendParticipant('s', id)));
  assert.equal(added.filter(Boolean).length, 1);
  assert.equal(text(file), 'u1\n');
});

test('concurrent appends of different ids each answer added:true and the file keeps call order', async (t) => {
  const { file, store } = await withJournal(t, 'u0\n');
  const added = await Promise.all(['u1', 'u2', 'u0', 'u3', 'u2'].map((id) => store.appendParticipant('s', id)));
  assert.deepEqual(added, [true, true, false, true, false]);
  assert.equal(text(file), 'u0\nu1\nu2\nu3\n');
  assert.deepEqual(await store.readParticipants('s'), ['u0', 'u1', 'u2', 'u3']);
});

test('an id appended after a removal is added again, even when the removal raced a read of the old journal', async (t) => {
  let gate: Promise<void> | undefined;
  let reached: () => void = () => undefined;
  const io = withIo({
    async read(fh, buf, position) {
      const n = await nodeIo.read(fh, buf, position);
      const g = gate;
      gate = undefined;
      if (g) {
        reached();
        await g;
      }
      return n;
    },
  });
  const { file, store } = await withJournal(t, 'u1\n', { io });
  let release: () => void = () => undefined;
  const atGate = new Promise<void>((resolve) => { reached = resolve; });
  gate = new Promise<void>((resolve) => { release = resolve; });
  const reading = store.readParticipants('s');
  await atGate;
  // The removal waits for the load the read started (an append made meanwhile is queued behind
  // that load, and the removal must not overtake it): it is called while the read is held.
  const removing = store.removeParticipants('s');
  release();
  assert.equal(await removing, true);
  assert.deepEqual(await reading, ['u1'], 'the read began before the removal');
  assert.equal(await store.appendParticipant('s', 'u1'), true);
  assert.equal(text(file), 'u1\n');
  assert.deepEqual(await store.readParticipants('s'), ['u1']);
});

test('appendParticipant for a name with no session row is refused and creates no journal', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await assert.rejects(() => store.appendParticipant('ghost', 'u1'), storeError('unknown-session', ['no session named "ghost"']));
  assert.equal(existsSync(path.join(dir, 'participants')), false);
});

test('a duplicate of an id whose first append is still in flight is answered only once that append is durable', async (t) => {
  const dir = tempDir();
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let writeStarted!: () => void;
  const started = new Promise<void>((r) => (writeStarted = r));
  const io = withIo({
    write: async (fh, buf) => {
      if (buf.toString().startsWith('u1')) {
        writeStarted();
        await held; // the disk holds the first append
      }
      return nodeIo.write(fh, buf);
    },
  });
  const store = await openIn(dir, { io, durability: 'write' });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  const first = store.appendParticipant('s', 'u1');
  await started;
  let answered = false;
  const second = store.appendParticipant('s', 'u1').then((added) => {
    answered = true;
    return added;
  });
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  assert.equal(answered, false, 'the duplicate waits for the first append');
  release();
  assert.equal(await first, true);
  assert.equal(await second, false);
  assert.equal(readFileSync(path.join(dir, 'participants/s.log'), 'utf8'), 'u1\n');
});

test('a duplicate whose first append failed appends the id itself', async (t) => {
  const dir = tempDir();
  let calls = 0;
  const io = withIo({
    write: async (fh, buf) => {
      if (buf.toString().startsWith('u1') && calls++ === 0) throw errno('ENOSPC');
      return nodeIo.write(fh, buf);
    },
  });
  const store = await openIn(dir, { io, durability: 'write' });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  const [first, second] = await Promise.allSettled([store.appendParticipant('s', 'u1'), store.appendParticipant('s', 'u1')]);
  assert.equal(first.status, 'rejected');
  assert.deepEqual(second, { status: 'fulfilled', value: true });
  assert.equal(readFileSync(path.join(dir, 'participants/s.log'), 'utf8'), 'u1\n');
});
