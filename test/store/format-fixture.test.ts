// Every format this project has written is read by every later build. The committed state dir
// under test/fixtures/format-v1-crash was left by the release before sealed lines had a version
// (scripts/make-format-fixture.ts wrote it): a crash after acknowledged appends whose records are
// only in its write-ahead log, the files behind them (cut, torn, emptied). The current build
// replays it and every acknowledged write is back, with the seq it was answered with.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cpSync, readFileSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import type { Entry } from '../../src/store/transcript-read.js';
import { withIo, openNoFollow, nodeIo } from '../../src/store/io.js';
import { openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const FIXTURE = path.join(import.meta.dirname, '../fixtures/format-v1-crash');

interface Expected {
  writtenBy: string;
  acked: {
    transcripts: Record<string, { seq: number; entry: Record<string, unknown> }[]>;
    participants: Record<string, string[]>;
    sessions: string[];
  };
  /** Each file's inode when the crash left it: a copy has other ones. */
  inodes: Record<string, number>;
}

const expected = JSON.parse(readFileSync(path.join(FIXTURE, 'expected.json'), 'utf8')) as Expected;

/** The fixture copied to a fresh dir, and an Io that gives each of its files the inode it had (a copy cannot keep them). */
function copied(): { dir: string; io: ReturnType<typeof withIo> } {
  const dir = tempDir();
  cpSync(path.join(FIXTURE, 'state'), dir, { recursive: true });
  const names = new WeakMap<FileHandle, string>();
  const io = withIo({
    open: async (file, flags, mode) => {
      const fh = await openNoFollow(file, flags, mode);
      names.set(fh, path.relative(dir, file));
      return fh;
    },
    inode: async (fh) => expected.inodes[names.get(fh) ?? ''] ?? nodeIo.inode(fh),
  });
  return { dir, io };
}

/** What the test compares of an entry: long texts by length and sha256, as expected.json keeps them. */
function shortened(e: Entry): Record<string, unknown> {
  const { text, ...rest } = e as Entry & { text?: string };
  if (text === undefined || text.length <= 200) return e as unknown as Record<string, unknown>;
  return { ...rest, textBytes: Buffer.byteLength(text), textSha256: createHash('sha256').update(text).digest('hex') };
}

test('the fixture is a crash: its files lack acknowledged appends that only its log holds', () => {
  const a = readFileSync(path.join(FIXTURE, 'state/transcripts/a.jsonl'), 'utf8');
  const lastOfA = expected.acked.transcripts.a?.at(-1)?.entry.ts as string;
  assert.ok(!a.includes(lastOfA), 'a.jsonl lacks its last acknowledged entry');
  assert.equal(readFileSync(path.join(FIXTURE, 'state/transcripts/c.jsonl'), 'utf8'), '');
  assert.ok(readFileSync(path.join(FIXTURE, 'state/.herrscher-state/wal.log')).length > 0, 'the log holds records');
});

test(`a state dir left by a crash of the release before versioned lines is replayed: every acknowledged write is back`, async () => {
  const { dir, io } = copied();
  const errors: string[] = [];
  const store = await openIn(dir, { io, error: (m) => errors.push(m), warn: () => undefined });
  try {
    assert.deepEqual(store.listSessions().map((s) => s.name).sort(), [...expected.acked.sessions].sort());
    for (const [name, acked] of Object.entries(expected.acked.transcripts)) {
      const page = await store.readTranscriptPage(name, { limit: 0 });
      const last = acked.at(-1)?.seq as number;
      // Every acknowledged entry still in the file (compaction dropped the oldest of a) has its seq.
      const kept = acked.filter((x) => x.seq >= page.firstSeq);
      assert.ok(kept.length > 0 && kept.at(-1)?.seq === last, `${name}: the newest acknowledged entry is kept`);
      assert.equal(page.firstSeq + page.entries.length, last + 1, `${name}: the next seq follows the last acknowledged one`);
      assert.deepEqual(page.entries.map(shortened), kept.map((x) => x.entry), `${name}: every acknowledged entry, in order, at its seq`);
    }
    // The compacted entries' usage comes from the meta of the old format.
    const usage = await store.transcriptUsage('a');
    assert.equal(usage.entries, expected.acked.transcripts.a?.length);
    for (const [name, ids] of Object.entries(expected.acked.participants)) {
      assert.deepEqual(await store.readParticipants(name), ids, `participants of ${name}`);
    }
  } finally {
    await store.close();
  }
  assert.deepEqual(errors, [], 'nothing in the fixture is damaged or foreign');
  assert.equal(readFileSync(path.join(dir, '.herrscher-state/wal.log')).length, 0, 'the log is emptied after the replay');
});
