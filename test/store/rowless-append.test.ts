// Appends to a name without a session row (requireSession: false, Go's rule: a turn that ends
// after its session closed) cost O(1) each, as with a row: the name's object is kept between
// appends, so its file is read once, not once per append. Counted through the io seam.
import assert from 'node:assert/strict';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Io } from '../../src/store/io.js';
import { openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const APPENDS = 50;

/** An Io that counts the opens for reading and the bytes read of files whose path ends with `suffix`. */
function readCountingIo(suffix: string): { io: Io; reads: { opens: number; bytes: number } } {
  const handles = new WeakSet<FileHandle>();
  const reads = { opens: 0, bytes: 0 };
  const io = withIo({
    async open(file, flags, mode) {
      const fh = await nodeIo.open(file, flags, mode);
      if (file.endsWith(suffix)) {
        handles.add(fh);
        if (flags === 'r') reads.opens++;
      }
      return fh;
    },
    async read(fh, buf, position) {
      const n = await nodeIo.read(fh, buf, position);
      if (handles.has(fh)) reads.bytes += n;
      return n;
    },
    async readFile(file) {
      const data = await nodeIo.readFile(file);
      if (file.endsWith(suffix)) {
        reads.opens++;
        reads.bytes += data.length;
      }
      return data;
    },
  });
  return { io, reads };
}

test('transcript/append without a row reads the transcript at most once over many appends', async (t) => {
  const dir = tempDir();
  const { io, reads } = readCountingIo(path.join('transcripts', 'gone.jsonl'));
  const store = await openIn(dir, { io, durability: 'write' });
  t.after(() => store.close());
  for (let i = 0; i < APPENDS; i++) {
    const seq = await store.appendTranscript('gone', { ts: `2026-01-01T00:00:${String(i).padStart(2, '0')}Z`, role: 'user', text: `turn ${i}` },
      { requireSession: false });
    assert.equal(seq, i);
  }
  assert.ok(reads.opens <= 1, `the transcript was opened for reading ${reads.opens} times over ${APPENDS} appends`);
  assert.equal(reads.bytes, 0, 'the file did not exist before the first append: nothing of it needs reading');
  assert.equal((await store.readTranscript('gone', 0)).length, APPENDS);
});

test('participants/append without a row reads the journal at most once over many appends', async (t) => {
  const dir = tempDir();
  const { io, reads } = readCountingIo(path.join('participants', 'gone.log'));
  const store = await openIn(dir, { io, durability: 'write' });
  t.after(() => store.close());
  for (let i = 0; i < APPENDS; i++) {
    assert.equal(await store.appendParticipant('gone', `u${i}`, { requireSession: false }), true);
    assert.equal(await store.appendParticipant('gone', `u${i}`, { requireSession: false }), false);
  }
  assert.ok(reads.opens <= 1, `the journal was opened for reading ${reads.opens} times over ${2 * APPENDS} appends`);
  assert.equal((await store.readParticipants('gone')).length, APPENDS);
});

test('row-less names stay within the cache bound: the oldest idle one is closed, and reopened when used again', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir, { durability: 'write', cachedNames: 16 });
  t.after(() => store.close());
  for (let i = 0; i < 40; i++) {
    await store.appendTranscript(`n${i}`, { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' }, { requireSession: false });
  }
  assert.ok(store.cachedNames.transcripts <= 16, `${store.cachedNames.transcripts} transcripts kept`);
  // n0 was closed long ago: it is read again and its seq numbering continues.
  assert.equal(await store.appendTranscript('n0', { ts: '2026-01-01T00:00:01Z', role: 'user', text: 'y' }, { requireSession: false }), 1);
});

test('reading unknown names keeps nothing', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir, { durability: 'write' });
  t.after(() => store.close());
  for (let i = 0; i < 20; i++) assert.deepEqual(await store.readTranscript(`unknown${i}`, 0), []);
  for (let i = 0; i < 20; i++) assert.deepEqual(await store.readParticipants(`unknown${i}`), []);
  assert.deepEqual(store.cachedNames, { transcripts: 0, journals: 0 });
});
