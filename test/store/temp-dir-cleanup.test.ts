// Go's `t.TempDir()`: a test creates a state dir, calls, and removes the dir right after its last
// call returned; the removal must stick. So the store writes only inside the call that needs it
// (a checkpoint due to size inside the append that crossed the bound, a compaction inside the
// append that triggered it), its close writes nothing, and a write after the dir was removed
// fails with the gone error (ENOENT, naming the dir) and makes nothing again. What close used to
// write (the log's checkpoint, the marks) is the next open's replay to recover.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { constants as C } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Io } from '../../src/store/io.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import path from 'node:path';
import { test } from 'node:test';
import type { Store } from '../../src/store/store.js';
import { Store as StoreClass } from '../../src/store/store.js';
import { isStateGone } from '../../src/store/state-gone.js';
import { COMPACT_TRIGGER_BYTES } from '../../src/store/transcript-compact.js';
import type { Durability } from '../../src/store/state-store.js';
import { newSession } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 60_000;
/** Low, so a few appends cross it and the append that does runs the checkpoint. */
const WAL_BOUND = 4 * 1024;
const small = (i: number) => ({ ts: `t${i}`, role: 'user', text: `entry ${i} ${'x'.repeat(200)}`, cost: 0.5, tokens_in: i });

/**
 * Every kind of write, each awaited: state save, session add, appends (one crossing the log's
 * bound, one compacting unless `compact` is false), participants.
 */
async function everyWrite(store: Store, { compact = true }: { compact?: boolean } = {}): Promise<number> {
  const { revision } = await store.saveState({ ...store.getPersistedState(), workspace: '/w' }, store.revision, store.epoch);
  assert.ok(revision > 0);
  await store.addSession(newSession('s'));
  let last = await store.appendTranscript('s', small(0));
  // Past the log's bound: this append's record makes the checkpoint due.
  for (let i = 1; i < 30; i++) last = await store.appendTranscript('s', small(i));
  if (!compact) return lastly(store, last);
  // Past Go's compaction trigger: the append that passes it compacts before it returns.
  const big = 'y'.repeat(COMPACT_TRIGGER_BYTES / 2 + 1024);
  last = await store.appendTranscript('s', { ts: 'big1', role: 'assistant', text: big });
  last = await store.appendTranscript('s', { ts: 'big2', role: 'assistant', text: big });
  assert.ok(existsSync(path.join(store.dir, '.herrscher-state', 'transcripts', 's.json')), 'the last append compacted the transcript');
  return lastly(store, last);
}

/**
 * The last calls: a participant, then a read of a transcript whose name has no row (Go's files
 * allow one): its object is dropped once idle, right after the read returned.
 */
async function lastly(store: Store, last: number): Promise<number> {
  assert.equal(await store.appendParticipant('s', 'u1'), true);
  assert.equal((await store.readTranscript('norow', 0)).length, 1);
  return last;
}

/** An Io that lists every call that writes (or syncs) made once `returned` is set. */
function watchedIo(): { io: Io; late: string[]; returned: boolean } {
  const seam = { io: nodeIo, late: [] as string[], returned: false };
  const writes = (name: string, show: (...args: never[]) => string = () => '') => (...args: never[]): void => {
    if (seam.returned) seam.late.push(`${name} ${show(...args)}`.trim());
  };
  const w = (name: keyof Io, show?: (...args: never[]) => string) => {
    const note = writes(name, show);
    const fn = nodeIo[name] as (...args: never[]) => unknown;
    return (...args: never[]) => {
      note(...args);
      return fn(...args);
    };
  };
  const rel = (f: string): string => path.basename(path.dirname(f)) + '/' + path.basename(f);
  const creates = (flags: string | number): boolean => (typeof flags === 'string' ? flags !== 'r' : (flags & (C.O_WRONLY | C.O_RDWR | C.O_CREAT)) !== 0);
  seam.io = withIo({
    writeAtomic: w('writeAtomic', (f: string) => rel(f)) as Io['writeAtomic'],
    syncDir: w('syncDir', (f: string) => rel(f)) as Io['syncDir'],
    write: w('write') as Io['write'],
    writeSynced: w('writeSynced') as Io['writeSynced'],
    datasync: w('datasync') as Io['datasync'],
    truncate: w('truncate') as Io['truncate'],
    rename: w('rename', (f: string) => rel(f)) as Io['rename'],
    mkdir: w('mkdir', (f: string) => rel(f)) as Io['mkdir'],
    unlink: w('unlink', (f: string) => rel(f)) as Io['unlink'],
    open: (file, flags, mode) => {
      if (creates(flags)) writes('open')();
      return nodeIo.open(file, flags, mode);
    },
  });
  return seam;
}

/** `dir` with a transcript written by Go for a name that has no row (read by everyWrite). */
function planted(dir: string): string {
  mkdirSync(path.join(dir, 'transcripts'), { recursive: true, mode: 0o700 });
  writeFileSync(path.join(dir, 'transcripts', 'norow.jsonl'), `${JSON.stringify(small(0))}\n`);
  return dir;
}

/** One event-loop turn after close: whatever a timer or an immediate of the store would write has had its turn. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

for (const [durability, compact] of [['sync', true], ['sync', false], ['write', true], ['write', false]] as [Durability, boolean][]) {
  test(`${durability}, ${compact ? 'a compaction among the writes' : 'no compaction'}: a state dir removed right after the last call returned stays removed through close`, { timeout: TIMEOUT }, async () => {
    const dir = planted(path.join(tempDir(), 'state'));
    const seam = watchedIo();
    const store = await StoreClass.open(path.join(dir, 'state.json'), { durability, walCheckpointBytes: WAL_BOUND, io: seam.io });
    await everyWrite(store, { compact });
    seam.returned = true;
    // As Go's RemoveAll: file by file, while anything the store still writes could land in between.
    await rm(dir, { recursive: true });
    assert.equal(store.gone, true);
    await store.close();
    await turn();
    await store.flush();
    await turn();
    assert.deepEqual(seam.late, [], 'nothing is written once the last call returned, close included');
    assert.equal(existsSync(dir), false, 'the store made the removed state dir again');
  });
}

test('the append whose record takes the log past its bound returns after the checkpoint it made due', { timeout: TIMEOUT }, async (t) => {
  const store = await StoreClass.open(path.join(tempDir(), 'state.json'), { walCheckpointBytes: WAL_BOUND });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  let checkpoints = 0;
  for (let i = 0; i < 60; i++) {
    const before = store.walBytes;
    await store.appendTranscript('s', small(i));
    assert.ok(store.walBytes <= WAL_BOUND, `append ${i} returned with ${store.walBytes} bytes in the log`);
    if (store.walBytes < before) checkpoints++;
  }
  assert.ok(checkpoints >= 2, `the bound was crossed (${checkpoints} checkpoints)`);
});

test('a write after the state dir was removed fails with the gone error naming the dir, and makes nothing again', { timeout: TIMEOUT }, async (t) => {
  const dir = path.join(tempDir(), 'state');
  const store = await StoreClass.open(path.join(dir, 'state.json'), { walCheckpointBytes: WAL_BOUND });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', small(0));
  await store.appendParticipant('s', 'u1');
  const before = { doc: store.getPersistedState(), revision: store.revision };
  rmSync(dir, { recursive: true });
  const gone = (err: unknown): boolean => {
    assert.ok(isStateGone(err), String(err));
    assert.equal((err as { code?: string }).code, 'ENOENT');
    assert.ok((err as Error).message.includes(`the state dir ${dir} was removed`), (err as Error).message);
    return true;
  };
  await assert.rejects(() => store.setInstanceID('x'), gone);
  await assert.rejects(() => store.addSession(newSession('t')), gone);
  await assert.rejects(() => store.saveState({ ...store.getPersistedState(), workspace: '/w' }, store.revision, store.epoch), gone);
  await assert.rejects(() => store.appendTranscript('s', small(1)), gone);
  await assert.rejects(() => store.appendParticipant('s', 'u2'), gone);
  await assert.rejects(() => store.removeTranscript('s'), gone);
  await assert.rejects(() => store.removeParticipants('s'), gone);
  assert.deepEqual({ doc: store.getPersistedState(), revision: store.revision }, before, 'memory is unchanged');
  assert.equal(existsSync(dir), false, 'nothing was made again');
  assert.equal(store.gone, true, 'what its owner looks at to drop the state');
});

test('a dir whose side folder alone was removed is still live: the next write makes what it needs there', async (t) => {
  const dir = tempDir();
  const store = await StoreClass.open(path.join(dir, 'state.json'));
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  rmSync(path.join(dir, 'transcripts'), { recursive: true, force: true });
  assert.equal(store.gone, false);
  assert.equal(await store.appendTranscript('s', small(0)), 0);
  assert.ok(existsSync(path.join(dir, 'transcripts', 's.jsonl')));
});

test('close writes nothing: the next open replays the log, and every acknowledged record and seq is back', { timeout: TIMEOUT }, async () => {
  const dir = planted(tempDir());
  let store = await StoreClass.open(path.join(dir, 'state.json'), { walCheckpointBytes: 1 << 30 });
  const last = await everyWrite(store);
  for (let i = 0; i < 5; i++) await store.appendTranscript('s', small(100 + i));
  await store.appendParticipant('s', 'u2');
  const expected = { entries: await store.readTranscript('s', 0), participants: await store.readParticipants('s'), usage: await store.transcriptUsage('s') };
  const wal = path.join(dir, '.herrscher-state', 'wal.log');
  const walBefore = readFileSync(wal);
  assert.ok(walBefore.length > 0, 'the log holds records since the compaction');
  await store.close();
  assert.deepEqual(readFileSync(wal), walBefore, 'close left the log as it was (no checkpoint)');
  // Every copy of the meta gone: only the marks, raised by the replay of the log, can number the file.
  unlinkSync(path.join(dir, '.herrscher-state', 'transcripts', 's.json'));
  unlinkSync(path.join(dir, '.herrscher-state', 'transcripts', 's.json.copy'));
  store = await StoreClass.open(path.join(dir, 'state.json'), { error: () => undefined });
  try {
    assert.equal(readFileSync(wal).length, 0, 'the open replayed and emptied the log');
    const entries = await store.readTranscript('s', 0);
    assert.deepEqual(entries, expected.entries);
    assert.deepEqual(await store.readParticipants('s'), expected.participants);
    assert.equal(await store.appendTranscript('s', small(200)), last + 6, 'seq goes on after the last acknowledged one');
  } finally {
    await store.close();
  }
});

test('the store makes the folders down to a new state dir at open, and only there', async (t) => {
  const root = tempDir();
  const dir = path.join(root, 'a', 'b');
  const store = await StoreClass.open(path.join(dir, 'state.json'));
  t.after(() => store.close());
  assert.ok(existsSync(dir));
  mkdirSync(path.join(root, 'unrelated'));
  rmSync(path.join(root, 'a'), { recursive: true });
  await assert.rejects(() => store.addSession(newSession('s')), (err) => isStateGone(err));
  assert.equal(existsSync(path.join(root, 'a')), false);
});
