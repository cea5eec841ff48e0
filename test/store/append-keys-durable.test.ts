// An append's idempotency key outlives what its append outlives: in sync mode a power loss that
// keeps the append (its write-ahead record) keeps its key, with no fdatasync of its own per append;
// a checkpoint syncs the keys' log before it empties the write-ahead log; and a compaction that
// replaced the transcript just before a crash does not lose the keys of the appends it held.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, truncateSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { Io } from '../../src/store/io.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { sealLine } from '../../src/store/sealed-line.js';
import { COMPACT_TRIGGER_BYTES } from '../../src/store/transcript-compact.js';
import { scanWal } from '../../src/store/wal-record.js';
import { newSession, openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const key = (seq: number) => ({ id: 'append-writer', seq });
const entry = (text: string) => ({ ts: '2026-01-01T00:00:00Z', role: 'user', text });
const keysLog = (dir: string) => path.join(dir, '.herrscher-state', 'append-keys.log');
const sizeOf = (file: string) => (existsSync(file) ? statSync(file).size : 0);

/** An Io that notes, in order, each sync and truncate of a file (by its base name). */
function syncNotingIo(): { io: Io; events: string[] } {
  const names = new WeakMap<FileHandle, string>();
  const events: string[] = [];
  const name = (fh: FileHandle) => names.get(fh) ?? '?';
  const io = withIo({
    open: async (file, flags, mode) => {
      const fh = await nodeIo.open(file, flags, mode);
      names.set(fh, path.basename(file));
      return fh;
    },
    datasync: (fh) => {
      events.push(`sync ${name(fh)}`);
      return nodeIo.datasync(fh);
    },
    writeSynced: (fh, buf) => {
      events.push(`sync ${name(fh)}`);
      return nodeIo.writeSynced(fh, buf);
    },
    truncate: (fh, size) => {
      events.push(`truncate ${name(fh)}`);
      return nodeIo.truncate(fh, size);
    },
  });
  return { io, events };
}

test('sync mode: a power loss that keeps a keyed append (its log record) keeps its key, and the append costs no sync of the keys\' log', async (t) => {
  const dir = tempDir();
  const { io, events } = syncNotingIo();
  let store = await openIn(dir, { io, durability: 'sync' });
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  assert.equal(await store.appendTranscript('a', entry('first')), 0);
  const transcript = path.join(dir, 'transcripts', 'a.jsonl');
  const before = { transcript: sizeOf(transcript), keys: sizeOf(keysLog(dir)) };
  events.length = 0;
  assert.equal(await store.appendTranscript('a', entry('keyed'), { writer: key(1) }), 1);
  assert.deepEqual(events.filter((e) => e.includes('append-keys')), [], 'no fdatasync of the keys\' log per append');
  assert.ok(sizeOf(keysLog(dir)) > before.keys, 'the key\'s line was written');
  await store.close(); // writes nothing: the record stays in the write-ahead log for the next start

  // A power loss: neither the key's line nor the transcript's bytes were synced; the record was.
  truncateSync(keysLog(dir), before.keys);
  truncateSync(transcript, before.transcript);
  store = await openIn(dir, { durability: 'sync' });
  assert.deepEqual((await store.readTranscript('a', 0)).map((e) => e.text), ['first', 'keyed'], 'the replay put the append back');
  assert.equal(await store.appendTranscript('a', entry('keyed'), { writer: key(1) }), 1, 'its retry is answered with its seq');
  assert.deepEqual((await store.readTranscript('a', 0)).map((e) => e.text), ['first', 'keyed'], 'and not written again');
});

test('sync mode: a keyed append that is its file\'s first (fdatasynced in the file itself) keeps its key through a power loss too, from its record without bytes', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir, { durability: 'sync' });
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  assert.equal(await store.appendTranscript('a', entry('keyed'), { writer: key(1) }), 0);
  const records = scanWal(readFileSync(path.join(dir, '.herrscher-state', 'wal.log'))).records;
  assert.deepEqual(records.map((r) => [r.d, r.k]), [['', [['append-writer', 1, 0]]]], 'the record carries the key, not the bytes');
  await store.close();
  truncateSync(keysLog(dir), 0); // the power loss took the key's line (written, never synced)
  store = await openIn(dir, { durability: 'sync' });
  assert.equal(await store.appendTranscript('a', entry('keyed'), { writer: key(1) }), 0, 'its retry is answered with its seq');
  assert.deepEqual((await store.readTranscript('a', 0)).map((e) => e.text), ['keyed'], 'and not written again');
});

test('sync mode: a checkpoint syncs the keys\' log before it empties the write-ahead log', async (t) => {
  const dir = tempDir();
  const { io, events } = syncNotingIo();
  // Every record passes the bound: each append runs a checkpoint.
  const store = await openIn(dir, { io, durability: 'sync', walCheckpointBytes: 1 });
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  events.length = 0;
  await store.appendTranscript('a', entry('keyed'), { writer: key(1) });
  const keysSynced = events.indexOf('sync append-keys.log');
  const emptied = events.indexOf('truncate wal.log');
  assert.ok(emptied >= 0, `a checkpoint ran: ${events.join(', ')}`);
  assert.ok(keysSynced >= 0 && keysSynced < emptied, `the keys' log is synced before the log is emptied: ${events.join(', ')}`);
});

test('a crash right after a compaction replaced the transcript: the keys of the appends it held are still answered', async (t) => {
  const dir = tempDir();
  let store = await openIn(dir, { durability: 'write' });
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  assert.equal(await store.appendTranscript('a', entry('small'), { writer: key(1) }), 0);
  // One entry past the trigger: its append compacts the file (keeping itself alone) before it answers.
  const big = entry('x'.repeat(COMPACT_TRIGGER_BYTES));
  const transcript = path.join(dir, 'transcripts', 'a.jsonl');
  const ino = statSync(transcript).ino;
  assert.equal(await store.appendTranscript('a', big, { writer: key(2) }), 1);
  assert.notEqual(statSync(transcript).ino, ino, 'the compaction replaced the file');
  await store.close(); // as a kill -9 would: nothing more is written

  store = await openIn(dir, { durability: 'write' });
  assert.equal(await store.appendTranscript('a', entry('small'), { writer: key(1) }), 0, 'an append compacted away is answered');
  assert.equal(await store.appendTranscript('a', big, { writer: key(2) }), 1, 'the append that compacted is answered');
  const texts = (await store.readTranscript('a', 0)).map((e) => e.text.length);
  assert.deepEqual(texts, [COMPACT_TRIGGER_BYTES], 'neither was written again');
});

test('a write-ahead record\'s keys are read when they are keys, and make it damaged when they are not', () => {
  const record = (k: unknown) => Buffer.from(sealLine(JSON.stringify({ f: 'transcripts/a.jsonl', i: 1, o: 0, d: 'x\n', k })));
  assert.deepEqual(scanWal(record([['w', 1, 2]])).records.map((r) => r.k), [[['w', 1, 2]]]);
  for (const bad of [['w', 1, 2], [['w', -1, 2]], [['w', 1]], [[1, 1, 2]], 'k']) {
    assert.equal(scanWal(record(bad)).damaged.length, 1, JSON.stringify(bad));
  }
});
