// A real full disk: a 64 KiB tmpfs, filled, then appends and a state.json write. Each fails with
// ENOSPC and leaves every file as it was. Needs root (mount); skipped with the reason otherwise.
import assert from 'node:assert/strict';
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { Store } from '../../src/store/store.js';
import { newSession, openIn, snapshot, storeError, text } from '../helpers/store.js';
import { statePathIn } from '../helpers/temp-dir.js';
import { fill, mountTmpfs, unmount } from '../helpers/tmpfs.js';

test('on a full disk, a transcript append, a participant append and a state.json write fail with ENOSPC and change nothing', async (t) => {
  const mounted = mountTmpfs('64k');
  if ('skip' in mounted) {
    t.skip(mounted.skip);
    return;
  }
  const dir = mounted.dir;
  const opened: Store[] = [];
  t.after(async () => {
    for (const s of opened) await s.close();
    unmount(dir);
  });
  const store = await openIn(dir);
  opened.push(store);
  await store.addSession(newSession('s'));
  await store.appendTranscript('s', { ts: 't1', role: 'user', text: 'before' });
  // The journal is filled to exactly one 4 KiB page, so its next line needs a block the disk lacks.
  const ids = ['u1', ...Array.from({ length: 15 }, (_, i) => `${i}`.padEnd(256, 'i')), 'z'.repeat(237)];
  for (const id of ids) assert.equal(await store.appendParticipant('s', id), true);
  fill(dir);

  const transcript = path.join(dir, 'transcripts', 's.jsonl');
  const journal = path.join(dir, 'participants', 's.log');
  const files = [statePathIn(dir), transcript, journal];
  const before = files.map(snapshot);
  const doc = store.getState();

  // Larger than any block's slack: part of it may be written before the disk refuses.
  await assert.rejects(
    () => store.appendTranscript('s', { ts: 't2', role: 'user', text: 'x'.repeat(20_000) }),
    storeError('io', ['append to transcripts/s.jsonl: ENOSPC'], 'ENOSPC'),
  );
  assert.equal(snapshot(journal)?.bytes.length, Buffer.alloc(4096).toString('base64').length, 'the journal is one full page');
  await assert.rejects(
    () => store.appendParticipant('s', 'late'),
    storeError('io', ['append to participants/s.log: ENOSPC'], 'ENOSPC'),
  );
  await assert.rejects(
    () => store.addSession(newSession('big', { project: 'p'.repeat(20_000) })),
    storeError('io', ['write state.json: ENOSPC'], 'ENOSPC'),
  );

  // A cut-back append changes the mtime, never the bytes or the inode.
  const content = (s: ReturnType<typeof snapshot> | undefined) => ({ bytes: s?.bytes, ino: s?.ino });
  assert.deepEqual(content(snapshot(transcript)), content(before[1]), 'the transcript is byte-identical: no partial line');
  assert.deepEqual(content(snapshot(journal)), content(before[2]), 'the journal is byte-identical');
  assert.deepEqual(await store.readParticipants('s'), ids);
  assert.deepEqual(snapshot(statePathIn(dir)), before[0], 'state.json is untouched');
  assert.equal(store.getState(), doc, 'memory unchanged');
  assert.equal(store.findSession('big'), null);
  assert.deepEqual(await store.readTranscript('s', 0), [{ ts: 't1', role: 'user', text: 'before' }]);
  assert.equal(await store.lastTranscriptTs('s'), 't1');
  assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith('state.json.')), [], 'no temp file left');

  // Room again: the next append lands on its own line after the old ones.
  rmSync(path.join(dir, 'filler'));
  await store.appendTranscript('s', { ts: 't3', role: 'user', text: 'after' });
  assert.equal(text(transcript), '{"ts":"t1","role":"user","text":"before"}\n{"ts":"t3","role":"user","text":"after"}\n');
  assert.equal(await store.appendParticipant('s', 'late'), true, 'the refused id was not recorded as present');
  assert.equal(text(journal), `${ids.join('\n')}\nlate\n`);
});
