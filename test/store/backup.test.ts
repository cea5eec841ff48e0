// Backup, verify and restore at the store's level (src/store/backup.ts, verify.ts, restore.ts):
// a compacted transcript keeps its numbering and usage through a restore; verify names each kind
// of damage by file and line and never writes; the refusals of backup and restore change nothing.
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { backupStore } from '../../src/store/backup.js';
import { MANIFEST_VERSION } from '../../src/store/backup-manifest.js';
import { RestoreRefused, restoreBackup } from '../../src/store/restore.js';
import { Store } from '../../src/store/store.js';
import { StoreError } from '../../src/store/store-error.js';
import { formatProblem, verifyStateDir } from '../../src/store/verify.js';
import { runToEnd } from '../helpers/cli.js';
import { newSession } from '../helpers/store.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const entry = (text: string, cost = 0.5) => ({ ts: '2026-01-01T00:00:00Z', role: 'user', text, cost, tokens_in: 3 });

/**
 * A store with sessions a (compacted: 6 entries of ~1 MiB) and b (two entries, a journal). With
 * `compacted` false, a's entries are 6 short ones: for the tests whose subject is b or the
 * refusals (a compacted transcript through backup, verify and restore is the first test's).
 */
async function populated(dir: string, { compacted = true } = {}): Promise<Store> {
  const store = await Store.open(statePathIn(dir));
  await store.addSession(newSession('a'));
  await store.addSession(newSession('b'));
  for (let i = 0; i < 6; i++) await store.appendTranscript('a', entry(`${i}:${'x'.repeat(compacted ? 1024 * 1024 : 16)}`));
  await store.appendTranscript('b', entry('b0'));
  await store.appendTranscript('b', entry('b1'));
  await store.appendParticipant('b', 'u1');
  return store;
}

/** Every file below `dir` with its bytes and mtime. */
function tree(dir: string): Map<string, { bytes: Buffer; mtimeMs: number }> {
  const out = new Map<string, { bytes: Buffer; mtimeMs: number }>();
  for (const rel of readdirSync(dir, { recursive: true }) as string[]) {
    const st = statSync(path.join(dir, rel));
    out.set(rel, { bytes: st.isFile() ? readFileSync(path.join(dir, rel)) : Buffer.alloc(0), mtimeMs: st.mtimeMs });
  }
  return out;
}

test('a restored backup numbers a compacted transcript as the original did, with its usage, and opens without a complaint', async () => {
  const dir = tempDir();
  const store = await populated(dir);
  const page = await store.readTranscriptPage('a', { limit: 0 });
  assert.ok(page.firstSeq > 0, 'compaction cut the file');
  const usage = await store.transcriptUsage('a');
  const dest = path.join(tempDir(), 'bk');
  const result = await backupStore(store, dest);
  assert.equal(result.revision, store.revision);
  assert.deepEqual((await verifyStateDir(dest)).problems, []);
  assert.deepEqual(readdirSync(dest).sort(), ['backup-manifest.json', 'participants', 'state.json', 'transcripts'], 'no side file, nothing that names an inode');
  assert.deepEqual(readdirSync(path.join(dir, '.herrscher-state')).filter((n) => n.startsWith('backup-')), [], 'the staging folder is gone');
  await store.appendTranscript('a', entry('after the backup'));
  await store.close();

  const target = path.join(tempDir(), 'restored');
  const restored = await restoreBackup(dest, statePathIn(target));
  assert.equal(restored.revision, result.revision);
  const errors: string[] = [];
  const again = await Store.open(statePathIn(target), { error: (m) => errors.push(m), warn: (m) => errors.push(m) });
  {
    const got = await again.readTranscriptPage('a', { limit: 0 });
    assert.equal(got.firstSeq, page.firstSeq);
    assert.deepEqual(got.entries, page.entries);
    assert.deepEqual(await again.transcriptUsage('a'), usage);
    assert.equal(await again.appendTranscript('a', entry('next')), page.firstSeq + page.entries.length);
    assert.deepEqual(await again.readParticipants('b'), ['u1']);
    assert.deepEqual((await again.readTranscript('b', 0)).map((e) => e.text), ['b0', 'b1']);
  }
  await again.close();
  assert.deepEqual(errors, []);
  assert.deepEqual((await verifyStateDir(target)).problems, []);
});

test('verify names each kind of damage by file (and line), and writes nothing', async (t) => {
  const dir = tempDir();
  const store = await populated(dir, { compacted: false });
  const dest = path.join(tempDir(), 'bk');
  await backupStore(store, dest);
  await store.close();
  const fresh = (): string => {
    const copy = path.join(tempDir(), 'copy');
    cpSync(dest, copy, { recursive: true });
    return copy;
  };
  const live = (): string => {
    const target = path.join(tempDir(), 'live');
    cpSync(dest, target, { recursive: true });
    unlinkSync(path.join(target, 'backup-manifest.json'));
    return target;
  };
  const problemsOf = async (d: string): Promise<string[]> => {
    const before = tree(d);
    const got = (await verifyStateDir(d)).problems.map(formatProblem);
    assert.deepEqual(tree(d), before, 'verify changed nothing: bytes and mtimes');
    return got;
  };
  const cases: [string, () => Promise<string>, RegExp[]][] = [
    ['state.json that is not JSON', async () => {
      const d = live();
      writeFileSync(path.join(d, 'state.json'), '{"sessions": [');
      return d;
    }, [/^state\.json: does not load: /]],
    ['a transcript line that is not an entry', async () => {
      const d = live();
      const file = path.join(d, 'transcripts/b.jsonl');
      const [l1, l2] = readFileSync(file, 'utf8').split('\n');
      writeFileSync(file, `${l1}\nnot json\n${l2}\n`);
      return d;
    }, [/^transcripts\/b\.jsonl:2: not a transcript entry/]],
    ['a torn last transcript line', async () => {
      const d = live();
      appendFileSync(path.join(d, 'transcripts/b.jsonl'), '{"ts":"2026-01-0');
      return d;
    }, [/^transcripts\/b\.jsonl:3: torn last line/]],
    ['a file whose checksum is not the manifest\'s', async () => {
      const d = fresh();
      const file = path.join(d, 'participants/b.log');
      writeFileSync(file, 'u2\n');
      return d;
    }, [/^participants\/b\.log: checksum mismatch: sha256 [0-9a-f]{64}, the manifest says [0-9a-f]{64}$/]],
    ['a missing file', async () => {
      const d = fresh();
      unlinkSync(path.join(d, 'transcripts/b.jsonl'));
      return d;
    }, [/^transcripts\/b\.jsonl: missing: the manifest lists it$/]],
    ['an extra file', async () => {
      const d = fresh();
      writeFileSync(path.join(d, 'transcripts/c.jsonl'), '');
      mkdirSync(path.join(d, 'notes'));
      writeFileSync(path.join(d, 'notes/x'), 'x');
      return d;
    }, [/^notes\/x: extra file: not part of a backup$/, /^transcripts\/c\.jsonl: extra file: the manifest does not list it$/]],
    ['a manifest of a newer format', async () => {
      const d = fresh();
      const file = path.join(d, 'backup-manifest.json');
      writeFileSync(file, readFileSync(file, 'utf8').replace(`"version": ${MANIFEST_VERSION}`, '"version": 9'));
      return d;
    }, [/^backup-manifest\.json: written in manifest version 9 by a newer herrscher-state/]],
  ];
  for (const [what, damage, want] of cases) {
    await t.test(what, async () => {
      const got = await problemsOf(await damage());
      assert.equal(got.length, want.length, got.join('\n'));
      for (const [i, re] of want.entries()) assert.match(got[i] as string, re);
    });
  }
  await t.test('the CLI prints them one a line and exits 1; 0 when there is none', async () => {
    const d = fresh();
    unlinkSync(path.join(d, 'transcripts/b.jsonl'));
    const bad = await runToEnd(['verify', d]);
    assert.equal(bad.code, 1);
    assert.equal(bad.stdout, 'transcripts/b.jsonl: missing: the manifest lists it\n');
    const good = await runToEnd(['verify', dest]);
    assert.equal(good.code, 0, good.stdout + good.stderr);
  });
});

test('verify of a live state dir with side files and an un-checkpointed log: no problem, nothing written; damaged side files are named', async () => {
  const dir = tempDir();
  const store = await populated(dir);
  const before = tree(dir);
  assert.ok(statSync(path.join(dir, '.herrscher-state/wal.log')).size > 0, 'the log holds records');
  assert.deepEqual((await verifyStateDir(dir)).problems, []);
  assert.deepEqual(tree(dir), before);
  await store.close();
  writeFileSync(path.join(dir, '.herrscher-state/transcripts/a.json'), 'garbage');
  writeFileSync(path.join(dir, '.herrscher-state/wal.log'), '00000000 {"f":"x"}\n');
  const got = (await verifyStateDir(dir)).problems.map(formatProblem);
  assert.deepEqual(got, [
    '.herrscher-state/transcripts/a.json: damaged, or describes neither transcripts/a.jsonl nor the file it replaced',
    '.herrscher-state/wal.log:1: damaged record (checksum mismatch): the replay skips it',
  ]);
});

test('backup refuses a DEST inside the state dir, or one that is not empty; restore refuses a target that is not empty, or a backup that fails verify', async () => {
  const dir = tempDir();
  const store = await populated(dir, { compacted: false });
  const isRefusal = (re: RegExp) => (err: unknown) => err instanceof StoreError && err.kind === 'invalid-input' && re.test(err.message);
  await assert.rejects(backupStore(store, path.join(dir, 'bk')), isRefusal(/is inside the state dir/));
  const full = tempDir();
  writeFileSync(path.join(full, 'x'), 'x');
  await assert.rejects(backupStore(store, full), isRefusal(/exists and is not empty/));
  await assert.rejects(backupStore(store, 'relative/bk'), isRefusal(/must be an absolute path/));
  assert.equal(existsSync(path.join(dir, 'bk')), false);
  const dest = path.join(tempDir(), 'bk');
  await backupStore(store, dest);
  await assert.rejects(restoreBackup(dest, store.statePath), (err: unknown) => err instanceof RestoreRefused && /a server serves .* \(pid \d+\)/.test(err.message));
  await store.close();
  await assert.rejects(restoreBackup(dest, store.statePath), (err: unknown) => err instanceof RestoreRefused && /exists and is not empty/.test(err.message));
  truncateSync(path.join(dest, 'transcripts/b.jsonl'), 3);
  const target = path.join(tempDir(), 'never');
  await assert.rejects(restoreBackup(dest, statePathIn(target)), (err: unknown) => err instanceof RestoreRefused && err.report?.problems.some((q) => q.file === 'transcripts/b.jsonl' && /size 3, the manifest says/.test(q.message)) === true);
  assert.equal(existsSync(target), false, 'nothing was written');
  assert.deepEqual(readdirSync(path.dirname(target)), [], 'not even a temp folder beside it');
});

test('backup with no server copies under the lock, after replaying what a crash kept only in the write-ahead log; it names no revision (no server run had one) and says offline', async () => {
  const dir = tempDir();
  const crashed = await Store.open(statePathIn(dir), { lock: false });
  await crashed.addSession(newSession('s'));
  for (const text of ['t1', 't2', 't3']) await crashed.appendTranscript('s', entry(text));
  // The power loss took the unsynced appends (a file's first is fdatasynced in the file itself).
  truncateSync(path.join(dir, 'transcripts/s.jsonl'), readFileSync(path.join(dir, 'transcripts/s.jsonl'), 'utf8').indexOf('\n') + 1);
  const dest = path.join(tempDir(), 'bk');
  const got = await runToEnd(['backup', dest, '--state', statePathIn(dir), '--socket', path.join(dir, 'none.sock')]);
  assert.equal(got.code, 1, 'an explicit socket with no server is an error: the state is not guessed');
  const offline = await runToEnd(['backup', dest, '--state', statePathIn(dir), '--json']);
  assert.equal(offline.code, 0, offline.stderr);
  const result = JSON.parse(offline.stdout) as Record<string, unknown>;
  assert.deepEqual({ revision: result.revision, epoch: result.epoch, offline: result.offline, files: result.files }, { revision: null, epoch: null, offline: true, files: 2 });
  assert.deepEqual(readFileSync(path.join(dest, 'transcripts/s.jsonl'), 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { text: string }).text), ['t1', 't2', 't3']);
  const report = await verifyStateDir(dest);
  assert.deepEqual(report.problems, []);
  assert.deepEqual({ revision: report.manifest?.revision, epoch: report.manifest?.epoch, offline: report.manifest?.offline }, { revision: null, epoch: null, offline: true });
  const text = await runToEnd(['backup', path.join(tempDir(), 'bk'), '--state', statePathIn(dir)]);
  assert.match(text.stdout, /^backup taken offline at \S+ \(no server was running, so no revision\), copied under its lock: 2 files/);
  const restored = await runToEnd(['restore', dest, '--state', statePathIn(path.join(tempDir(), 'restored'))]);
  assert.match(restored.stdout, /^restored the backup taken offline at /, restored.stderr);
});

test('backup with the lock held by a server that does not answer exits 3, names the holder and writes nothing', async () => {
  const dir = tempDir();
  const holder = await Store.open(statePathIn(dir));
  const dest = path.join(tempDir(), 'bk');
  try {
    const got = await runToEnd(['backup', dest, '--state', statePathIn(dir)]);
    assert.equal(got.code, 3, got.stderr);
    assert.match(got.stderr, new RegExp(`already serving .*\\(pid ${process.pid}\\).*pass its --socket PATH`));
    assert.equal(existsSync(dest), false);
  } finally {
    await holder.close();
  }
});

test('a transcript whose last line is torn is copied as it was when the backup was fixed, though the next append cuts that line', async () => {
  const dir = tempDir();
  const first = await Store.open(statePathIn(dir));
  await first.addSession(newSession('s'));
  await first.appendTranscript('s', entry('kept'));
  await first.close();
  const file = path.join(dir, 'transcripts/s.jsonl');
  appendFileSync(file, '{"ts":"torn'); // a crash in the middle of an append
  const torn = readFileSync(file);
  const store = await Store.open(statePathIn(dir));
  const dest = path.join(tempDir(), 'bk');
  let cut: Buffer | undefined;
  await backupStore(store, dest, async (fix) => {
    const fixed = await fix();
    // Writes flow again before the copy: this append cuts the torn line in the live file.
    await store.appendTranscript('s', entry('after'));
    cut = readFileSync(file);
    return fixed;
  });
  await store.close();
  assert.notDeepEqual(cut, torn, 'the append rewrote the end of the file');
  assert.deepEqual(readFileSync(path.join(dest, 'transcripts/s.jsonl')), torn);
  assert.deepEqual((await verifyStateDir(dest)).problems.map(formatProblem), ['transcripts/s.jsonl:2: torn last line (no newline, not an entry): readers skip it, the next append cuts it']);
});
