// Sequence numbers and paged history over the socket (in-process server): paging backwards with before = firstSeq
// returns every retained entry once, in order, while another client appends and a compaction
// cuts the file; seq starts at 0 on a Go-written file's oldest line and survives restarts and
// compaction.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { StateClient } from '../../src/client/client.js';
import type { Ctx, InProcessServer } from '../helpers/server.js';
import { closeClean, startServer } from '../helpers/server.js';
import { entry, fileEntries, forceCompaction, tagOf, TIMEOUT, transcriptFile } from '../helpers/feed.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

/** Stops the server (its store's close awaited) and checks nothing was logged at error. */
const stop = (server: InProcessServer): Promise<void> => closeClean(server);

/** An in-process server on `dir` (a fresh one when absent) and a typed client on it. */
async function start(t: Ctx, dir?: string): Promise<{ dir: string; server: InProcessServer; client: StateClient }> {
  const server = await startServer(t, { dir });
  return { dir: server.dir, server, client: await server.client() };
}

/** Appends `texts` in windows of 500 pipelined requests; returns their seqs in order. */
async function appendAll(client: StateClient, name: string, texts: string[]): Promise<number[]> {
  const seqs: number[] = [];
  for (let from = 0; from < texts.length; from += 500) {
    const window = texts.slice(from, from + 500).map((text) => client.transcriptAppend({ name, entry: entry(text) }));
    for (const r of await Promise.all(window)) seqs.push(r.seq);
  }
  return seqs;
}

interface PageSeen {
  firstSeq: number;
  tags: string[];
  afterCompaction: boolean;
}

test('paging back with before = firstSeq during appends and a compaction returns every retained entry once, in order, and nothing it dropped', { timeout: 60_000 }, async (t) => {
  const { dir, server, client: pager } = await start(t);
  const appender = await server.client('ndjson');
  const background = await server.client();
  await pager.sessionAdd({ session: { name: 'p' } });

  // 1 800 entries of ~2 KiB: about 3.7 MB, under the 4 MiB trigger (half the appends and pages
  // of 3 600 entries of ~1 KiB, the same bytes before the compaction).
  const COUNT = 1800;
  const tags = Array.from({ length: COUNT }, (_, i) => `s${i}`);
  const seqOf = new Map<string, number>();
  const seqs = await appendAll(appender, 'p', tags.map((tag) => `${tag}:`.padEnd(2000, '.')));
  for (const [i, tag] of tags.entries()) seqOf.set(tag, seqs[i] as number);
  assert.deepEqual(seqs, tags.map((_t, i) => i), 'seq is 0 for the first append, +1 per append');

  // Another client appends all along (entries newer than anything the pager asks for).
  let stopBackground = false;
  const backgroundDone = (async () => {
    for (let i = 0; !stopBackground; i++) await background.transcriptAppend({ name: 'p', entry: entry(`bg${i}`) });
  })();

  const pages: PageSeen[] = [];
  // From the fill's end: the background entries after it are not ours to check.
  let before = COUNT;
  let compacted = false;
  const page = async (): Promise<boolean> => {
    const got = await pager.transcriptRead({ name: 'p', limit: 50, before });
    assert.ok(got.entries.length <= 50, `a page of ${got.entries.length} entries for limit 50`);
    if (got.entries.length === 0) return false;
    pages.push({ firstSeq: got.firstSeq, tags: got.entries.map((e) => tagOf(e.text)), afterCompaction: compacted });
    before = got.firstSeq;
    return true;
  };

  while (pages.length < 4) assert.ok(await page());
  // A compaction while pages are being read: 300 KiB entries until the file shrinks.
  const compaction = forceCompaction(appender, dir, 'p').then((big) => {
    compacted = true;
    return big;
  });
  for (let i = 0; i < 6 && !compacted; i++) assert.ok(await page());
  const big = await compaction;
  while (await page());
  stopBackground = true;
  await backgroundDone;

  const inFile = fileEntries(transcriptFile(dir, 'p')).map((e) => tagOf(e.text));
  const retained = inFile.filter((tag) => seqOf.has(tag));
  const lo = seqOf.get(retained[0] as string) as number;
  assert.ok(lo > 0, 'the compaction dropped the oldest entries');
  assert.ok(pages.some((p) => p.afterCompaction), 'pages were read after the compaction');

  const returned: { seq: number; tag: string }[] = [];
  for (const p of [...pages].reverse()) {
    for (const [i, tag] of p.tags.entries()) {
      const expected = seqOf.get(tag);
      assert.equal(expected, p.firstSeq + i, `entries[${i}] of the page at firstSeq ${p.firstSeq} is ${tag}, seq ${expected}`);
      returned.push({ seq: p.firstSeq + i, tag });
    }
  }
  assert.deepEqual(returned.map((r) => r.seq), Array.from({ length: COUNT - lo }, (_, i) => lo + i), 'seqs lo..end once each: no gap, no duplicate');
  assert.deepEqual(returned.map((r) => r.tag), retained, 'exactly the retained entries of the fill');
  assert.ok(big.length > 0);
  await stop(server);
});

test('a transcript written by Go (no meta) numbers its oldest line 0; a line Go skips gets no seq', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), `${JSON.stringify({
    home: { id: '', type: '' },
    sessions: [{ id: 's_g', incarnation: `inc_${'A'.repeat(26)}`, name: 'g', channelID: 'c', type: 'text', cmd: 'claude' }],
  }, null, 2)}\n`);
  mkdirSync(path.join(dir, 'transcripts'));
  writeFileSync(transcriptFile(dir, 'g'), [
    '{"ts":"2026-01-01T00:00:00Z","role":"user","text":"g0"}',
    '{"ts":"2026-01-01T00:00:01Z","role":"assistant","text":"g1","cost":0.01}',
    'not json',
    '{"ts":"2026-01-01T00:00:02Z","role":"user","text":"g2"}',
    '{"ts":"2026-01-01T00:00:03Z","role":"assistant","text":"g3"}',
    '',
  ].join('\n'));
  const { server, client } = await start(t, dir);

  const all = await client.transcriptRead({ name: 'g' });
  assert.deepEqual({ firstSeq: all.firstSeq, texts: all.entries.map((e) => e.text) }, { firstSeq: 0, texts: ['g0', 'g1', 'g2', 'g3'] });
  const newest = await client.transcriptRead({ name: 'g', limit: 2 });
  assert.deepEqual({ firstSeq: newest.firstSeq, texts: newest.entries.map((e) => e.text) }, { firstSeq: 2, texts: ['g2', 'g3'] });
  const older = await client.transcriptRead({ name: 'g', limit: 2, before: newest.firstSeq });
  assert.deepEqual({ firstSeq: older.firstSeq, texts: older.entries.map((e) => e.text) }, { firstSeq: 0, texts: ['g0', 'g1'] });
  const none = await client.transcriptRead({ name: 'g', limit: 2, before: older.firstSeq });
  assert.deepEqual(none.entries, []);
  assert.deepEqual(await client.transcriptAppend({ name: 'g', entry: entry('g4') }), { seq: 4 });
  await stop(server);
});

test('seq continues after a server restart', { timeout: TIMEOUT }, async (t) => {
  const first = await start(t);
  await first.client.sessionAdd({ session: { name: 'r' } });
  assert.deepEqual(await appendAll(first.client, 'r', ['a0', 'a1', 'a2']), [0, 1, 2]);
  await stop(first.server);

  const second = await start(t, first.dir);
  assert.deepEqual(await appendAll(second.client, 'r', ['b0', 'b1']), [3, 4]);
  const page = await second.client.transcriptRead({ name: 'r', limit: 3 });
  assert.deepEqual({ firstSeq: page.firstSeq, texts: page.entries.map((e) => e.text) }, { firstSeq: 2, texts: ['a2', 'b0', 'b1'] });
  await stop(second.server);
});

test('seq continues after a compaction, and after a restart that follows it', { timeout: 60_000 }, async (t) => {
  const first = await start(t);
  await first.client.sessionAdd({ session: { name: 'c' } });
  assert.deepEqual(await appendAll(first.client, 'c', ['a0', 'a1', 'a2']), [0, 1, 2]);
  const big = await forceCompaction(first.client, first.dir, 'c');
  const seqOf = new Map<string, number>([['a0', 0], ['a1', 1], ['a2', 2], ...big.map((b): [string, number] => [b.tag, b.seq])]);
  assert.deepEqual(big.map((b) => b.seq), big.map((_b, i) => 3 + i), 'a compaction does not disturb the numbering of appends');

  const check = async (client: StateClient, what: string): Promise<number> => {
    const inFile = fileEntries(transcriptFile(first.dir, 'c')).map((e) => tagOf(e.text));
    const page = await client.transcriptRead({ name: 'c' });
    assert.deepEqual(page.entries.map((e) => tagOf(e.text)), inFile, `${what}: a full read is the file`);
    assert.equal(page.firstSeq, seqOf.get(inFile[0] as string), `${what}: firstSeq is the seq the oldest kept entry was appended with`);
    assert.ok(page.firstSeq > 0, `${what}: entries were dropped`);
    return page.firstSeq;
  };
  const firstSeq = await check(first.client, 'after the compaction');
  const next = 3 + big.length;
  assert.deepEqual(await first.client.transcriptAppend({ name: 'c', entry: entry('after') }), { seq: next });
  seqOf.set('after', next);
  await stop(first.server);

  const second = await start(t, first.dir);
  assert.equal(await check(second.client, 'after the restart'), firstSeq);
  assert.deepEqual(await second.client.transcriptAppend({ name: 'c', entry: entry('restarted') }), { seq: next + 1 });
  await stop(second.server);
});
