// Seq numbers and usage at the store level, where failures can be injected: stable across a
// compaction and a reopen, right for whichever file a crash between writing the meta and renaming
// the compacted file left, reset by removing the transcript.
import assert from 'node:assert/strict';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { TranscriptEntry } from '../../src/protocol/model.js';
import type { Io } from '../../src/store/io.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Store } from '../../src/store/store.js';
import { COMPACT_TRIGGER_BYTES } from '../../src/store/transcript-compact.js';
import { errno, newSession, openIn } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';
import { assertUsage, sumOf } from '../helpers/usage.js';

const TIMEOUT = 30_000;

const entry = (tag: string, extra: Partial<TranscriptEntry> = {}): TranscriptEntry => ({ ts: `ts-${tag}`, role: 'user', text: tag, ...extra });
/** A 300 KiB entry: 14 of them pass the 4 MiB trigger. */
const big = (tag: string): TranscriptEntry => entry(tag, { text: `${tag}:`.padEnd(300 * 1024, 'x'), cost: 0.3, tokens_in: 7 });
const tagOf = (e: TranscriptEntry) => e.text.split(':', 1)[0] as string;

const fileOf = (dir: string) => path.join(dir, 'transcripts', 's.jsonl');
const metaOf = (dir: string) => path.join(dir, '.herrscher-state', 'transcripts', 's.json');
const lines = (dir: string) => readFileSync(fileOf(dir), 'utf8').split('\n').filter(Boolean).map((l) => tagOf(JSON.parse(l) as TranscriptEntry));
/**
 * The tag of the file's first line, from its first bytes. A compaction keeps the newest entries,
 * so "the oldest is still in the file" is "it is still first": the loops that append until a
 * compaction ask this after each append instead of reading and parsing the whole 4 MiB each time.
 */
function firstTag(dir: string): string | undefined {
  const fd = openSync(fileOf(dir), 'r');
  try {
    const head = Buffer.alloc(4096);
    const n = readSync(fd, head, 0, head.length, 0);
    return /"text":"([^":]*)/.exec(head.toString('utf8', 0, n))?.[1];
  } finally {
    closeSync(fd);
  }
}

/** Tracks what was appended and the seq each tag got. */
class Log {
  readonly appended: TranscriptEntry[] = [];
  readonly seqOf = new Map<string, number>();

  constructor(private store: Store) {}

  use(store: Store): void {
    this.store = store;
  }

  async append(e: TranscriptEntry): Promise<number> {
    const seq = await this.store.appendTranscript('s', e);
    this.appended.push(e);
    this.seqOf.set(tagOf(e), seq);
    return seq;
  }

  /** Checks a full read against the file on disk: entries[i] has seq firstSeq + i. Returns firstSeq. */
  async check(dir: string, what: string): Promise<number> {
    const page = await this.store.readTranscriptPage('s', {});
    assert.deepEqual(page.entries.map(tagOf), lines(dir), `${what}: a full read is the file`);
    for (const [i, e] of page.entries.entries()) assert.equal(this.seqOf.get(tagOf(e)), page.firstSeq + i, `${what}: seq of ${tagOf(e)}`);
    assertUsage(await this.store.transcriptUsage('s'), sumOf(this.appended), `${what}: usage`);
    return page.firstSeq;
  }
}

async function opened(dir: string, io?: Io, warn?: (m: string, e: unknown) => void): Promise<Store> {
  return openIn(dir, { durability: 'write', ...(io ? { io } : {}), ...(warn ? { warn } : {}) });
}

test('a compaction keeps each kept entry\'s seq, the next append gets the next one, and a reopen agrees', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  let store = await opened(dir);
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  const log = new Log(store);
  for (let i = 0; i < 20; i++) assert.equal(await log.append(entry(`e${i}`)), i);
  let n = 0;
  while (firstTag(dir) === 'e0') assert.equal(await log.append(big(`b${n}`)), 20 + n++);
  const firstSeq = await log.check(dir, 'after the compaction');
  assert.ok(firstSeq > 20, `the small entries and some big ones were dropped (firstSeq ${firstSeq})`);
  assert.equal(await log.append(entry('next')), 20 + n);

  await store.close();
  store = await opened(dir);
  log.use(store);
  assert.equal(await log.check(dir, 'after a reopen'), firstSeq);
  assert.equal(await log.append(entry('reopened')), 21 + n);
});

/**
 * An Io that fails the rename of `<file>.compact` once armed, and (as a crash would) leaves the
 * temp file behind: the state after a crash between writing the meta and the rename.
 */
function crashBeforeRename(): { io: Io; arm(): void; fired(): boolean } {
  let armed = false;
  let fired = false;
  const io = withIo({
    rename: async (from, to) => {
      if (armed && from.endsWith('.compact')) {
        fired = true;
        throw errno('EIO', 'rename');
      }
      return nodeIo.rename(from, to);
    },
    unlink: async (file) => {
      if (fired && file.endsWith('.compact')) return; // the process is "dead": nothing cleans up
      return nodeIo.unlink(file);
    },
  });
  return { io, arm: () => (armed = true), fired: () => fired };
}

/** Appends big entries until the armed rename has failed once; the file stays past the trigger. */
async function appendUntilCrash(log: Log, crash: ReturnType<typeof crashBeforeRename>, prefix: string): Promise<void> {
  crash.arm();
  for (let i = 0; !crash.fired(); i++) await log.append(big(`${prefix}${i}`));
}

test('a crash between writing the meta and renaming the first compaction leaves the old file, numbered from 0 with full usage after a reopen', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const crash = crashBeforeRename();
  const warned: string[] = [];
  let store = await opened(dir, crash.io, (m) => warned.push(m));
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  const log = new Log(store);
  for (let i = 0; i < 10; i++) await log.append(entry(`e${i}`));
  await appendUntilCrash(log, crash, 'b');
  assert.equal(warned.length, 1, 'the failed compaction was reported');
  assert.ok(statSync(fileOf(dir)).size > COMPACT_TRIGGER_BYTES, 'the old, uncompacted file is still there');
  assert.ok(existsSync(metaOf(dir)), 'the meta for the new file was written before the rename');
  assert.ok(existsSync(`${fileOf(dir)}.compact`), 'the compacted file was never renamed into place');
  assert.equal(lines(dir)[0], 'e0');

  await store.close();
  store = await opened(dir);
  log.use(store);
  assert.equal(await log.check(dir, 'after the crash'), 0, 'the old file is numbered from 0');
  assert.deepEqual(readdirSync(path.dirname(fileOf(dir))), ['s.jsonl'], 'the temp file was swept');
  const next = log.appended.length;
  assert.equal(await log.append(entry('after')), next, 'the next seq follows the last line');
});

test('a crash between writing the meta and renaming a later compaction leaves the previous compacted file, with its own seq and usage after a reopen', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const crash = crashBeforeRename();
  let store = await opened(dir, crash.io);
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  const log = new Log(store);
  for (let i = 0; i < 10; i++) await log.append(entry(`e${i}`));
  for (let i = 0; firstTag(dir) === 'e0'; i++) await log.append(big(`first${i}`));
  const firstSeq = await log.check(dir, 'after the first compaction');
  assert.ok(firstSeq > 0);
  const before = lines(dir);

  await appendUntilCrash(log, crash, 'second');
  assert.deepEqual(lines(dir).slice(0, before.length), before, 'the first compaction\'s file is still there');
  // The meta is `<crc32> <json>`: the checksum first, then the generations.
  const meta = JSON.parse(readFileSync(metaOf(dir), 'utf8').slice(9)) as { ino: number; prev?: { ino: number } };
  assert.notEqual(meta.ino, statSync(fileOf(dir)).ino, 'the meta already describes the file that was never renamed');

  await store.close();
  store = await opened(dir);
  log.use(store);
  assert.equal(await log.check(dir, 'after the crash'), firstSeq, 'the file there keeps the numbers of the first compaction');
  const next = log.appended.length;
  assert.equal(await log.append(entry('after')), next);
});

test('a failed rename without a crash is retried after the next append and numbers stay right throughout', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  let failures = 1;
  const io = withIo({
    rename: async (from, to) => {
      if (from.endsWith('.compact') && failures-- > 0) throw errno('EIO', 'rename');
      return nodeIo.rename(from, to);
    },
  });
  const store = await opened(dir, io);
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  const log = new Log(store);
  for (let i = 0; i < 10; i++) await log.append(entry(`e${i}`));
  for (let i = 0; failures > 0; i++) await log.append(big(`b${i}`));
  assert.equal(await log.check(dir, 'after the failed compaction'), 0);
  await log.append(entry('retry'));
  const firstSeq = await log.check(dir, 'after the retried compaction');
  assert.ok(firstSeq > 0, 'the retry compacted');
});

/** An Io whose directory fsync fails once, right after the compacted file was renamed into place. */
function fsyncFailsAfterRename(): Io {
  let failNext = false;
  let failed = false;
  return withIo({
    rename: async (from, to) => {
      await nodeIo.rename(from, to);
      if (from.endsWith('.compact') && !failed) failNext = failed = true;
    },
    syncDir: async (d) => {
      if (failNext) {
        failNext = false;
        throw errno('EIO', 'fsync');
      }
      return nodeIo.syncDir(d);
    },
  });
}

/** A store whose first compaction renamed the new file in and then failed its directory fsync. */
async function afterFailedFsync(t: { after(fn: () => Promise<void>): void }) {
  const dir = tempDir();
  const warned: string[] = [];
  const store = await opened(dir, fsyncFailsAfterRename(), (m) => warned.push(m));
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  const log = new Log(store);
  for (let i = 0; i < 10; i++) await log.append(entry(`e${i}`));
  for (let i = 0; warned.length === 0; i++) await log.append(big(`b${i}`));
  assert.ok(!lines(dir).includes('e0'), 'the compacted file is in place');
  return { dir, store, log };
}

test('a directory fsync failing after the compacted file was renamed in', { timeout: TIMEOUT }, async (t) => {
  // One store for both steps: the second goes on from where the first left it.
  const { dir, store, log } = await afterFailedFsync(t);

  await t.test('still leaves transcript reads working', async () => {
    const firstSeq = await log.check(dir, 'right after the failed fsync');
    const next = log.appended.length;
    assert.equal(await log.append(entry('next')), next);
    assert.equal(await log.check(dir, 'after the next append'), firstSeq);
  });

  await t.test('then a later compaction and a reopen keep seq and usage right', async () => {
    const oldest = lines(dir)[0] as string;
    for (let i = 0; firstTag(dir) === oldest; i++) await log.append(big(`c${i}`));
    const firstSeq = await log.check(dir, 'after the second compaction');
    await store.close();
    const reopened = await opened(dir);
    t.after(() => reopened.close());
    log.use(reopened);
    assert.equal(await log.check(dir, 'after a reopen'), firstSeq);
    const next = log.appended.length;
    assert.equal(await log.append(entry('next2')), next);
  });
});

test('removing the transcript resets seq to 0 and deletes its meta, also across a reopen', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  let store = await opened(dir);
  t.after(() => store.close());
  await store.addSession(newSession('s'));
  let log = new Log(store);
  for (let i = 0; i < 5; i++) await log.append(entry(`e${i}`));
  for (let i = 0; firstTag(dir) === 'e0'; i++) await log.append(big(`b${i}`));
  assert.ok(existsSync(metaOf(dir)));

  assert.equal(await store.removeTranscript('s'), true);
  assert.equal(existsSync(metaOf(dir)), false, 'the meta went with the file');
  assert.deepEqual(await store.readTranscriptPage('s', {}), { entries: [], firstSeq: 0 });
  assertUsage(await store.transcriptUsage('s'), sumOf([]), 'usage after the removal');

  log = new Log(store);
  assert.equal(await log.append(entry('again', { cost: 0.5 })), 0);
  assert.equal(await log.check(dir, 'after the removal'), 0);
  await store.close();
  store = await opened(dir);
  log.use(store);
  assert.equal(await log.check(dir, 'after a reopen'), 0);
  assert.equal(await log.append(entry('again2')), 1);
});
