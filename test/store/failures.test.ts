// Failed writes, injected through the fs seam: a failure rejects with kind io and the errno, and
// leaves memory and every file exactly as they were (Go keeps the in-memory change; fixed).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { Io } from '../../src/store/io.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { Store } from '../../src/store/store.js';
import { errno, newSession, openIn, snapshot, storeError, text } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { isStateGone } from '../../src/store/state-gone.js';

/** An Io whose `name` call throws `code` while `armed` is true. */
function faulty(name: 'writeAtomic' | 'mkdir' | 'syncDir', code: string): { io: Io; arm(on: boolean): void } {
  let armed = false;
  const real = nodeIo[name] as (...a: unknown[]) => Promise<void>;
  const io = withIo({
    [name]: (...args: unknown[]) => (armed ? Promise.reject(errno(code, name)) : real(...args)),
  });
  return { io, arm: (on) => { armed = on; } };
}

const noAbsolutePath = (err: unknown): boolean => {
  assert.ok(!(err as Error).message.includes('/abs/secret/path'), (err as Error).message);
  return true;
};

// ---- state.json ----------------------------------------------------------------------------

for (const code of ['ENOSPC', 'EACCES', 'EIO', 'EROFS']) {
  test(`a state.json write failing with ${code} rejects with kind io and code ${code}; memory and disk are unchanged`, async (t) => {
    const dir = tempDir();
    const { io, arm } = faulty('writeAtomic', code);
    const store = await openIn(dir, { io });
    t.after(() => store.close());
    await store.addSession(newSession('a'));
    const before = snapshot(statePathIn(dir));
    const doc = store.getState();
    arm(true);
    await assert.rejects(() => store.setHome({ id: 'h', type: 'category' }), (err) =>
      storeError('io', [`write state.json: ${code}`], code)(err) && noAbsolutePath(err));
    await assert.rejects(() => store.addSession(newSession('b')), storeError('io', [], code));
    await assert.rejects(() => store.setResumeToken('a', 'tok'), storeError('io', [], code));
    assert.equal(store.getState(), doc, 'memory unchanged');
    assert.equal(store.findSession('b'), null, 'a failed add leaves no row (Go keeps it appended)');
    assert.deepEqual(snapshot(statePathIn(dir)), before, 'disk unchanged');
    arm(false);
    assert.deepEqual(await store.setWorkspace('/ws'), { changed: true });
    const disk = JSON.parse(text(statePathIn(dir))) as { home: { id: string }; workspace: string; sessions: { name: string; resumeToken?: string }[] };
    assert.equal(disk.home.id, '', 'the failed setHome never reaches the file');
    assert.deepEqual(disk.sessions.map((s) => s.name), ['a']);
    assert.equal(disk.sessions[0]?.resumeToken, undefined);
    assert.equal(disk.workspace, '/ws');
  });
}

test('a state dir removed under the store is not made again: the next commit fails with the gone error and leaves memory unchanged', async (t) => {
  const dir = tempDir();
  const store = await openIn(dir);
  t.after(() => store.close());
  await store.addSession(newSession('a'));
  const doc = store.getState();
  rmSync(dir, { recursive: true });
  await assert.rejects(() => store.setWorkspace('/ws'), (err) => {
    storeError('io', [`the state dir ${dir} was removed`, 'write state.json: ENOENT'], 'ENOENT')(err);
    assert.ok(isStateGone(err));
    return true;
  });
  assert.equal(store.getState(), doc, 'memory unchanged');
  assert.equal(existsSync(dir), false, 'nothing made again');
});

test('mutations queued behind a failed write are re-applied on the last committed document', async (t) => {
  const dir = tempDir();
  let failures = 1;
  const io = withIo({
    writeAtomic: (file, data, opts) => (failures-- > 0 ? Promise.reject(errno('ENOSPC')) : nodeIo.writeAtomic(file, data, opts)),
  });
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  const failed = assert.rejects(store.setHome({ id: 'h', type: 'x' }), storeError('io', [], 'ENOSPC'));
  const queued = store.setWorkspace('/ws');
  await failed;
  assert.deepEqual(await queued, { changed: true });
  assert.deepEqual(store.getState().home, { id: '', type: '' });
  assert.equal(store.getState().workspace, '/ws');
  assert.equal(text(statePathIn(dir)), '{\n  "home": {\n    "id": "",\n    "type": ""\n  },\n  "workspace": "/ws",\n  "sessions": null\n}');
});

test('a failed incarnation backfill at load refuses to open, names the step, and leaves the file and lock free', async () => {
  const dir = tempDir();
  const legacy = '{"sessions":[{"name":"alpha"}]}';
  writeFileSync(statePathIn(dir), legacy);
  const { io, arm } = faulty('writeAtomic', 'ENOSPC');
  arm(true);
  await assert.rejects(() => openIn(dir, { io }), storeError('io', ['persist session incarnation backfill: write state.json: ENOSPC'], 'ENOSPC'));
  assert.equal(text(statePathIn(dir)), legacy);
  const store = await openIn(dir);
  assert.match(store.findSession('alpha')?.incarnation ?? '', /^inc_[A-Z2-7]{26}$/);
  await store.close();
});

// ---- transcripts and journals ------------------------------------------------------------

/** An Io whose write puts half the buffer in the file, then fails with `code` (once armed). */
function halfWrite(code: string): { io: Io; arm(on: boolean): void; hits(): number } {
  let armed = false;
  let hits = 0;
  const io = withIo({
    async write(fh: FileHandle, buf: Buffer) {
      if (!armed) return nodeIo.write(fh, buf);
      hits++;
      await nodeIo.write(fh, buf.subarray(0, Math.max(1, buf.length >> 1)));
      throw errno(code);
    },
  });
  return { io, arm: (on) => { armed = on; }, hits: () => hits };
}

const entry = (ts: string, text = 'x') => ({ ts, role: 'user', text });

test('a transcript append that writes half its line then fails with ENOSPC leaves the file byte-identical', async (t) => {
  const dir = tempDir();
  const { io, arm, hits } = halfWrite('ENOSPC');
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', entry('t1'));
  const file = path.join(dir, 'transcripts', 's.jsonl');
  const before = text(file);
  arm(true);
  await assert.rejects(() => store.appendTranscript('s', entry('t2', 'y'.repeat(1000))), (err) =>
    storeError('io', ['append to transcripts/s.jsonl: ENOSPC'], 'ENOSPC')(err) && noAbsolutePath(err));
  assert.equal(hits(), 1, 'the failure did happen mid-write');
  assert.equal(text(file), before, 'no partial line survives');
  assert.deepEqual(await store.readTranscript('s', 0), [entry('t1')]);
  assert.equal(await store.lastTranscriptTs('s'), 't1');
  arm(false);
  await store.appendTranscript('s', entry('t3'));
  assert.equal(text(file), `${before}{"ts":"t3","role":"user","text":"x"}\n`);
});

test('a transcript append whose fdatasync fails with EIO is cut back: the file is byte-identical', async (t) => {
  const dir = tempDir();
  let armed = false;
  const io = withIo({ datasync: (fh) => (armed ? Promise.reject(errno('EIO', 'fdatasync')) : nodeIo.datasync(fh)) });
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', entry('t1'));
  const file = path.join(dir, 'transcripts', 's.jsonl');
  const before = text(file);
  armed = true;
  await assert.rejects(() => store.appendTranscript('s', entry('t2')), storeError('io', ['append to transcripts/s.jsonl: EIO'], 'EIO'));
  assert.equal(text(file), before);
  armed = false;
  await store.appendTranscript('s', entry('t3'));
  assert.deepEqual((await store.readTranscript('s', 0)).map((e) => e.ts), ['t1', 't3']);
});

test('a transcript append whose open fails with EACCES rejects with kind io and creates no file', async (t) => {
  const dir = tempDir();
  // Only the session files fail: the write-ahead log (.herrscher-state/) opens as usual.
  const io = withIo({ open: (file, flags, mode) => (flags === 'r' || file.includes('.herrscher-state') ? nodeIo.open(file, flags, mode) : Promise.reject(errno('EACCES', 'open'))) });
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  await assert.rejects(() => store.appendTranscript('s', entry('t1')), storeError('io', ['append to transcripts/s.jsonl: EACCES'], 'EACCES'));
  assert.equal(existsSync(path.join(dir, 'transcripts', 's.jsonl')), false);
  assert.deepEqual(await store.readTranscript('s', 0), []);
  assert.equal(await store.lastTranscriptTs('s'), '');
});

test('a removal queued behind an append whose open fails still runs and answers', async (t) => {
  const dir = tempDir();
  let opened: () => void = () => undefined;
  const openCalled = new Promise<void>((resolve) => { opened = resolve; });
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => { release = resolve; });
  const io = withIo({
    async open(file, flags, mode) {
      if (flags === 'r' || file.includes('.herrscher-state')) return nodeIo.open(file, flags, mode);
      opened();
      await released;
      throw errno('EACCES', 'open');
    },
  });
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  const append = assert.rejects(store.appendTranscript('s', entry('t1')), storeError('io', [], 'EACCES'));
  const appendParticipant = assert.rejects(store.appendParticipant('s', 'u1'), storeError('io', [], 'EACCES'));
  await openCalled;
  const removedTranscript = store.removeTranscript('s');
  const removedJournal = store.removeParticipants('s');
  release();
  await append;
  await appendParticipant;
  assert.equal(await removedTranscript, false);
  assert.equal(await removedJournal, false);
});

test('a participant append that writes half its line then fails leaves the journal byte-identical and the id not added', async (t) => {
  const dir = tempDir();
  const { io, arm } = halfWrite('ENOSPC');
  const store = await openIn(dir, { io });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  assert.equal(await store.appendParticipant('s', 'u1'), true);
  const file = path.join(dir, 'participants', 's.log');
  arm(true);
  await assert.rejects(() => store.appendParticipant('s', 'user-with-a-long-id'), storeError('io', ['append to participants/s.log: ENOSPC'], 'ENOSPC'));
  assert.equal(text(file), 'u1\n');
  assert.deepEqual(await store.readParticipants('s'), ['u1']);
  arm(false);
  assert.equal(await store.appendParticipant('s', 'user-with-a-long-id'), true, 'the failed id was not recorded as present');
  assert.equal(text(file), 'u1\nuser-with-a-long-id\n');
});

test('a transcript remove that fails with EACCES rejects with kind io and keeps the file', async (t) => {
  const dir = tempDir();
  const io = withIo({ unlink: (file) => (file.endsWith('.jsonl') ? Promise.reject(errno('EACCES', 'unlink')) : nodeIo.unlink(file)) });
  const store = await Store.open(statePathIn(dir), { io });
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', entry('t1'));
  await assert.rejects(() => store.removeTranscript('s'), storeError('io', ['remove transcripts/s.jsonl: EACCES'], 'EACCES'));
  assert.deepEqual(readdirSync(path.join(dir, 'transcripts')), ['s.jsonl']);
  assert.equal(await store.lastTranscriptTs('s'), 't1');
});
