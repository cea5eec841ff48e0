// A write-ahead record names its file by inode and by the file's first bytes (file-head.ts). After
// a crash another writer may remove a transcript or journal and start a new one under the same
// name, and the file system may give it the removed file's inode number (ext4 reuses them): the
// replay must not take the new file for the old one and append the old one's entries into it.
// The reuse is simulated through the io seam: the new file reports the removed one's inode.
import assert from 'node:assert/strict';
import { readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { withIo, nodeIo } from '../../src/store/io.js';
import { scanWal, WAL_REL } from '../../src/store/wal-record.js';
import { sealLine } from '../../src/store/sealed-line.js';
import { newSession, openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const entry = (ts: string) => ({ ts, role: 'user', text: ts });

/**
 * A dir whose store wrote `before` to a's transcript and journal and stopped cleanly, then
 * appended `after` and was dropped without a close (a crash: the log holds those records).
 */
async function crashedWithHistory(): Promise<string> {
  const dir = tempDir();
  const first = await openIn(dir);
  await first.addSession(newSession('a'));
  for (const ts of ['t1', 't2']) await first.appendTranscript('a', entry(ts));
  await first.appendParticipant('a', 'u1');
  await first.close();
  const crashed = await openIn(dir, { lock: false });
  for (const ts of ['t3', 't4']) await crashed.appendTranscript('a', entry(ts));
  await crashed.appendParticipant('a', 'u2');
  assert.ok(readFileSync(path.join(dir, WAL_REL)).length > 0, 'the log holds the records of the crashed run');
  return dir;
}

/** Removes `rel` and writes `text` as a new file there; returns an Io under which the new file has the old one's inode number. */
function replacedWithSameInode(dir: string, rel: string, text: string): ReturnType<typeof withIo> {
  const file = path.join(dir, rel);
  const old = statSync(file).ino;
  unlinkSync(file);
  writeFileSync(file, text);
  const fresh = statSync(file).ino;
  return withIo({ inode: async (fh) => {
    const ino = await nodeIo.inode(fh);
    return ino === fresh ? old : ino;
  } });
}

for (const [what, rel, text] of [
  ['transcript', 'transcripts/a.jsonl', '{"ts":"n1","role":"go","text":"a new session of the same name"}\n'],
  ['participants journal', 'participants/a.log', 'someone-else\n'],
] as const) {
  test(`a ${what} removed and started again by another writer after a crash, with the same inode number, is left as that writer left it`, async () => {
    const dir = await crashedWithHistory();
    const io = replacedWithSameInode(dir, rel, text);
    const warnings: string[] = [];
    const errors: string[] = [];
    const store = await openIn(dir, { io, warn: (m) => warnings.push(m), error: (m) => errors.push(m) });
    await store.close();
    assert.equal(readFileSync(path.join(dir, rel), 'utf8'), text, 'nothing of the removed file was appended into the new one');
    assert.deepEqual(errors, []);
    assert.ok(warnings.some((w) => w.includes(rel) && /left alone.*inode number was reused/.test(w)), warnings.join('\n'));
    assert.equal(readFileSync(path.join(dir, WAL_REL)).length, 0, 'the log is emptied');
  });
}

/**
 * A dir whose store created a's transcript and journal with `n` appends each and was dropped
 * without a close: no checkpoint since the files were made (their first record is at offset 0).
 */
async function crashedWithNewFiles(n: number): Promise<string> {
  const dir = tempDir();
  const crashed = await openIn(dir, { lock: false });
  await crashed.addSession(newSession('a'));
  for (let i = 1; i <= n; i++) {
    await crashed.appendTranscript('a', entry(`t${i}`));
    await crashed.appendParticipant('a', `u${i}`);
  }
  assert.ok(readFileSync(path.join(dir, WAL_REL)).length > 0, 'the log holds the records of the crashed run');
  return dir;
}

for (const n of [1, 3]) {
  for (const [what, rel, text] of [
    ['transcript', 'transcripts/a.jsonl', '{"ts":"n1","role":"go","text":"a new session of the same name"}\n'],
    ['participants journal', 'participants/a.log', 'someone-else\n'],
  ] as const) {
    test(`a ${what} made since the last checkpoint (${n} append(s)), removed and started again by another writer with the same inode number, is left as that writer left it`, async () => {
      const dir = await crashedWithNewFiles(n);
      const io = replacedWithSameInode(dir, rel, text);
      const errors: string[] = [];
      const store = await openIn(dir, { io, error: (m) => errors.push(m) });
      await store.close();
      assert.equal(readFileSync(path.join(dir, rel), 'utf8'), text, 'nothing of the removed file was appended into the new one');
      assert.deepEqual(errors, []);
      assert.equal(readFileSync(path.join(dir, WAL_REL)).length, 0, 'the log is emptied');
    });
  }
}

test('files made since the last checkpoint, still in place after a power loss that took all but their first append: every record is put back', async () => {
  const dir = await crashedWithNewFiles(3);
  const transcript = path.join(dir, 'transcripts/a.jsonl');
  const journal = path.join(dir, 'participants/a.log');
  // The first append of a file is fdatasynced in the file itself (its first bytes name it): it stays.
  const t = readFileSync(transcript, 'utf8');
  writeFileSync(transcript, t.slice(0, t.indexOf('{"ts":"t2"')));
  writeFileSync(journal, 'u1\n');
  const store = await openIn(dir);
  try {
    assert.deepEqual((await store.readTranscriptPage('a', {})).entries.map((e) => e.ts), ['t1', 't2', 't3']);
    assert.deepEqual(await store.readParticipants('a'), ['u1', 'u2', 'u3']);
  } finally {
    await store.close();
  }
});

test('the same crash with the file still in place: every record is put back (the head check takes the file for its own)', async () => {
  const dir = await crashedWithHistory();
  const file = path.join(dir, 'transcripts/a.jsonl');
  const full = readFileSync(file, 'utf8');
  writeFileSync(file, full.slice(0, full.indexOf('{"ts":"t3"'))); // the power loss took t3 and t4
  const store = await openIn(dir);
  try {
    assert.deepEqual((await store.readTranscriptPage('a', {})).entries.map((e) => e.ts), ['t1', 't2', 't3', 't4']);
    assert.deepEqual(await store.readParticipants('a'), ['u1', 'u2']);
  } finally {
    await store.close();
  }
});

test('a record whose head is not `<n>:<crc32 hex>` is damaged (skipped, never guessed at)', () => {
  const good = { f: 'transcripts/a.jsonl', i: 1, o: 0, d: 'x\n' };
  for (const h of [7, '7', '7:xyz', '-1:00000000', '4:0000000']) {
    const scan = scanWal(Buffer.from(sealLine(JSON.stringify({ ...good, h }))));
    assert.deepEqual(scan.records, [], JSON.stringify(h));
    assert.match(scan.damaged[0]?.why ?? '', /h is not a head/);
  }
  assert.deepEqual(scanWal(Buffer.from(sealLine(JSON.stringify({ ...good, h: '0:00000000' })))).records, [{ ...good, h: '0:00000000' }]);
});
