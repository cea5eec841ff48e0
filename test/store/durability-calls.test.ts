// What each durability mode promises, checked through the store's file-system seam (Io): with
// `--durability sync` every whole-file replace of a file the store needs after a power loss
// (state.json, the transcript metas and their copies, the high-water marks) is written with
// sync:true and then its folder is fsynced, so the rename survives too; every append is
// fdatasynced (its log record, or the file itself) before it is answered. With `write` none of
// state.json's or the appends' syncs happen: that mode trades them for speed.
import assert from 'node:assert/strict';
import type { FileHandle } from 'node:fs/promises';
import fs from 'node:fs/promises';
import fsCallbacks, { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { mock, test } from 'node:test';
import type { Durability } from '../../src/store/state-store.js';
import { nodeIo, openNoFollow, withIo } from '../../src/store/io.js';
import { replaceFile } from '../../src/store/writer-worker.js';
import { COMPACT_TRIGGER_BYTES } from '../../src/store/transcript-compact.js';
import { newSession, openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

type Call =
  | { op: 'writeAtomic'; file: string; sync: boolean }
  | { op: 'syncDir'; file: string }
  | { op: 'write' | 'datasync'; file: string }
  | { op: 'answered'; file: string }
  | { op: 'rename'; file: string; to: string };

/** An Io that records every replace, folder fsync, write and fdatasync, by real path. */
function recordingIo() {
  const calls: Call[] = [];
  const names = new WeakMap<FileHandle, string>();
  const io = withIo({
    open: async (file, flags, mode) => {
      const fh = await openNoFollow(file, flags, mode);
      names.set(fh, file);
      return fh;
    },
    writeAtomic: async (file, data, opts) => {
      await nodeIo.writeAtomic(file, data, opts);
      calls.push({ op: 'writeAtomic', file, sync: opts.sync });
    },
    syncDir: async (dir) => {
      await nodeIo.syncDir(dir);
      calls.push({ op: 'syncDir', file: dir });
    },
    write: async (fh, buf) => {
      calls.push({ op: 'write', file: names.get(fh) ?? '?' });
      return nodeIo.write(fh, buf);
    },
    datasync: async (fh) => {
      await fh.datasync();
      calls.push({ op: 'datasync', file: names.get(fh) ?? '?' });
    },
    rename: async (from, to) => {
      await nodeIo.rename(from, to);
      calls.push({ op: 'rename', file: from, to });
    },
  });
  return { io, calls };
}

const entry = (ts: string, text = ts) => ({ ts, role: 'user', text });

/**
 * Opens a store in `mode`, commits state.json, appends, then appends big entries until the
 * transcript is compacted (which writes the metas and the marks); returns every call made.
 */
async function exercise(mode: Durability): Promise<{ dir: string; calls: Call[] }> {
  const dir = await fs.realpath(tempDir());
  const { io, calls } = recordingIo();
  const store = await openIn(dir, { io, durability: mode });
  try {
    await store.addSession(newSession('s'));
    calls.push({ op: 'answered', file: 'session' });
    await store.appendTranscript('s', entry('t0'));
    calls.push({ op: 'answered', file: 'append' });
    await store.appendParticipant('s', 'u1');
    calls.push({ op: 'answered', file: 'append' });
    const big = 'x'.repeat(512 * 1024);
    const file = path.join(dir, 'transcripts/s.jsonl');
    const most = Math.ceil(COMPACT_TRIGGER_BYTES / big.length) * 2 + 2; // bounded: never loops
    let compacted = false;
    for (let i = 1; i < most && !compacted; i++) {
      const before = statSync(file).size;
      await store.appendTranscript('s', entry(`t${i}`, big));
      compacted = statSync(file).size < before;
    }
    assert.ok(compacted, 'the transcript was compacted (metas and marks were written)');
    await store.flush();
  } finally {
    await store.close();
  }
  return { dir, calls };
}

/** The files the store needs after a power loss, replaced whole. */
const mustSurvive = (dir: string, file: string): boolean =>
  file === path.join(dir, 'state.json') || /\/\.herrscher-state\/(high-water\.json|transcripts\/s\.json(\.copy)?)$/.test(file);

test('sync: state.json, metas and marks are replaced with sync:true and their folder fsynced after', { timeout: 120_000 }, async () => {
  const { dir, calls } = await exercise('sync');
  const replaces = calls.flatMap((c, i) => (c.op === 'writeAtomic' && mustSurvive(dir, c.file) ? [{ c, i }] : []));
  const kinds = new Set(replaces.map(({ c }) => path.basename(c.file)));
  for (const k of ['state.json', 'high-water.json', 's.json', 's.json.copy']) assert.ok(kinds.has(k), `${k} was written: ${[...kinds].join(', ')}`);
  for (const { c, i } of replaces) {
    assert.equal((c as { sync: boolean }).sync, true, `${path.relative(dir, c.file)} replaced with sync:true`);
    // Before the next replace of the same file, and for state.json before the commit is answered
    // (its commit answers only once the folder is synced).
    const next = calls.findIndex((d, j) => j > i && ((d.op === 'writeAtomic' && d.file === c.file) || (d.op === 'answered' && path.basename(c.file) === 'state.json')));
    const synced = calls.findIndex((d, j) => j > i && (next < 0 || j < next) && d.op === 'syncDir' && d.file === path.dirname(c.file));
    assert.ok(synced > i, `the folder of ${path.relative(dir, c.file)} is fsynced after its replace (call ${i})`);
  }
});

test('sync: every append is fdatasynced (its log record or its file) before it is answered', { timeout: 120_000 }, async () => {
  const { calls } = await exercise('sync');
  let from = 0;
  let answered = 0;
  for (const [i, c] of calls.entries()) {
    if (c.op !== 'answered') continue;
    if (c.file === 'append') {
      answered++;
      const span = calls.slice(from, i);
      const written = span.filter((d) => d.op === 'write').map((d) => d.file);
      assert.ok(written.length > 0, `append ${answered} wrote something`);
      const lastWrite = span.map((d) => d.op).lastIndexOf('write');
      const file = span[lastWrite]?.file;
      assert.ok(span.slice(lastWrite).some((d) => d.op === 'datasync' && d.file === file), `append ${answered}: ${file} fdatasynced after its write, before the answer`);
    }
    from = i + 1;
  }
  assert.equal(answered, 2);
});

test('sync: a new file\'s first append is fdatasynced in the file itself before it is answered (a log record at offset 0 would have no first bytes to name the file by)', { timeout: 120_000 }, async () => {
  const { dir, calls } = await exercise('sync');
  const answers = calls.flatMap((c, i) => (c.op === 'answered' && c.file === 'append' ? [i] : []));
  for (const [k, rel] of ['transcripts/s.jsonl', 'participants/s.log'].entries()) {
    const file = path.join(dir, rel);
    const span = calls.slice((answers[k - 1] ?? -1) + 1, answers[k]);
    const wrote = span.findIndex((c) => c.op === 'write' && c.file === file);
    assert.ok(wrote >= 0, `${rel} written by its first append`);
    assert.ok(span.slice(wrote).some((c) => c.op === 'datasync' && c.file === file), `${rel} fdatasynced after its first write, before the answer`);
  }
});

test('write: no fsync for state.json, its folder, or the appends', { timeout: 120_000 }, async () => {
  const { dir, calls } = await exercise('write');
  const state = calls.filter((c) => c.op === 'writeAtomic' && c.file === path.join(dir, 'state.json'));
  assert.ok(state.length > 0, 'state.json was written');
  for (const c of state) assert.equal((c as { sync: boolean }).sync, false, 'state.json replaced with sync:false');
  assert.deepEqual(calls.filter((c) => c.op === 'syncDir' && c.file === dir), [], 'the state dir is never fsynced');
  let from = 0;
  for (const [i, c] of calls.entries()) {
    if (c.op !== 'answered') continue;
    if (c.file === 'append') assert.deepEqual(calls.slice(from, i).filter((d) => d.op === 'datasync'), [], 'no fdatasync before an append is answered');
    from = i + 1;
  }
});

for (const mode of ['sync', 'write'] as const) {
  test(`${mode}: a compaction's temp file is fdatasynced after its last write, before it is renamed over the transcript`, { timeout: 120_000 }, async () => {
    const { dir, calls } = await exercise(mode);
    const tmp = path.join(dir, 'transcripts/s.jsonl.compact');
    const renamed = calls.findIndex((c) => c.op === 'rename' && c.file === tmp);
    assert.ok(renamed > 0, 'the compaction renamed its temp file into place');
    assert.equal((calls[renamed] as { to: string }).to, path.join(dir, 'transcripts/s.jsonl'));
    const before = calls.slice(0, renamed);
    const lastWrite = before.findLastIndex((c) => c.op === 'write' && c.file === tmp);
    assert.ok(lastWrite >= 0, 'the temp file was written');
    // Else a power loss after the rename can leave the transcript empty or short (the rename
    // reaches the disk before the data).
    assert.ok(before.slice(lastWrite).some((c) => c.op === 'datasync' && c.file === tmp), 'fdatasync of the temp file between its last write and the rename');
  });
}

test('the real replace fsyncs its temp file before the rename with sync:true, and not with sync:false', async (t) => {
  const dir = tempDir();
  const file = path.join(dir, 'state.json');
  // The replace runs on the writer thread (replaceFile, with write-file-atomic's synchronous
  // replace): the same function is called here, with node:fs's calls recorded in order.
  const order: string[] = [];
  const { fsyncSync, renameSync } = fsCallbacks;
  const fsync = mock.method(fsCallbacks, 'fsyncSync', (fd: number) => {
    order.push('fsync');
    fsyncSync(fd);
  });
  const rename = mock.method(fsCallbacks, 'renameSync', (from: string, to: string) => {
    order.push('rename');
    renameSync(from, to);
  });
  t.after(() => {
    fsync.mock.restore();
    rename.mock.restore();
  });
  replaceFile(file, Buffer.from('durable'), { mode: 0o600, sync: true });
  assert.deepEqual(order, ['fsync', 'rename'], 'the temp file is fsynced with sync:true, before the rename');
  assert.equal(readFileSync(file, 'utf8'), 'durable');
  order.length = 0;
  replaceFile(file, Buffer.from('fast'), { mode: 0o600, sync: false });
  assert.deepEqual(order, ['rename'], 'no fsync with sync:false');
  assert.equal(readFileSync(file, 'utf8'), 'fast');
  // And the store's Io does go through it: what it writes is there, with its stamp.
  const stamp = await nodeIo.writeAtomic(file, 'through the thread', { mode: 0o600, sync: true });
  assert.equal(readFileSync(file, 'utf8'), 'through the thread');
  const st = statSync(file);
  assert.deepEqual(stamp, { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs });
});
