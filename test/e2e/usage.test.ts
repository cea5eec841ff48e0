// Usage that survives compaction, over the socket (in-process server): transcript/usage sums every entry ever
// appended, the ones compaction removed included, before and after a compaction and across a
// restart; session/infos gives every session with its last activity and usage in one call.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { StateClient } from '../../src/client/client.js';
import type { TranscriptEntry } from '../../src/protocol/model.js';
import type { Ctx, InProcessServer } from '../helpers/server.js';
import { closeClean, startServer } from '../helpers/server.js';
import { entry, fileEntries, forceCompaction, TIMEOUT, transcriptFile } from '../helpers/feed.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { assertUsage, sumOf } from '../helpers/usage.js';

/** Stops the server (its store's close awaited) and checks nothing was logged at error. */
const stop = (server: InProcessServer): Promise<void> => closeClean(server);

/** An in-process server on `dir` (a fresh one when absent) and a typed client on it. */
async function start(t: Ctx, dir?: string): Promise<{ dir: string; server: InProcessServer; client: StateClient }> {
  const server = await startServer(t, { dir });
  return { dir: server.dir, server, client: await server.client() };
}

const ts = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString().replace('.000Z', 'Z');

/** Entries with awkward float costs and every counter set. */
const priced = (n: number, from = 0): TranscriptEntry[] =>
  Array.from({ length: n }, (_, k) => {
    const i = from + k;
    return entry(`u${i}`, {
      ts: ts(i),
      role: i % 2 ? 'assistant' : 'user',
      cost: 0.1 + i * 0.0037,
      tokens_in: 100 + i,
      tokens_out: 7 * i,
      cache_read: i % 3,
      cache_create: i % 5,
      dur_ms: 1000 + i,
    });
  });

async function appendEach(client: StateClient, name: string, entries: readonly TranscriptEntry[]): Promise<void> {
  for (const e of entries) await client.transcriptAppend({ name, entry: e });
}

test('transcript/usage sums every entry ever appended, and a compaction that drops entries changes none of the sums', { timeout: 60_000 }, async (t) => {
  const { dir, server, client } = await start(t);
  await client.sessionAdd({ session: { name: 'u' } });
  assertUsage(await client.transcriptUsage({ name: 'u' }), sumOf([]), 'no transcript yet');

  const appended = priced(40);
  await appendEach(client, 'u', appended);
  assertUsage(await client.transcriptUsage({ name: 'u' }), sumOf(appended), 'before the compaction');

  const big = await forceCompaction(client, dir, 'u');
  appended.push(...big.map((b) => b.entry));
  const inFile = fileEntries(transcriptFile(dir, 'u'));
  assert.ok(inFile.length < appended.length, 'the compaction dropped entries');
  assert.notEqual(inFile[0]?.text, 'u0', 'the first entry is gone from the file');
  assertUsage(await client.transcriptUsage({ name: 'u' }), sumOf(appended), 'after the compaction');

  const more = priced(3, 100);
  await appendEach(client, 'u', more);
  appended.push(...more);
  assertUsage(await client.transcriptUsage({ name: 'u' }), sumOf(appended), 'after appends that follow the compaction');
  await stop(server);
});

test('transcript/usage after a restart equals what it was before, compacted entries included', { timeout: 60_000 }, async (t) => {
  const first = await start(t);
  await first.client.sessionAdd({ session: { name: 'u' } });
  const appended = priced(25);
  await appendEach(first.client, 'u', appended);
  appended.push(...(await forceCompaction(first.client, first.dir, 'u')).map((b) => b.entry));
  const more = priced(5, 50);
  await appendEach(first.client, 'u', more);
  appended.push(...more);
  const before = await first.client.transcriptUsage({ name: 'u' });
  assertUsage(before, sumOf(appended), 'before the restart');
  await stop(first.server);

  const second = await start(t, first.dir);
  assertUsage(await second.client.transcriptUsage({ name: 'u' }), before, 'after the restart');
  await stop(second.server);
});

test('transcript/usage of a transcript written by Go sums its lines', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  writeFileSync(statePathIn(dir), JSON.stringify({ home: { id: '', type: '' }, sessions: [{ name: 'g', channelID: '', type: '', cmd: '' }] }));
  mkdirSync(path.join(dir, 'transcripts'));
  const lines = priced(6);
  writeFileSync(transcriptFile(dir, 'g'), lines.map((e) => `${JSON.stringify(e)}\n`).join(''));
  const { server, client } = await start(t, dir);
  assertUsage(await client.transcriptUsage({ name: 'g' }), sumOf(lines), 'a file without a usage record');
  await stop(server);
});

test('session/infos returns every session, in list order, with its last activity and usage', { timeout: 60_000 }, async (t) => {
  const first = await start(t);
  const { client } = first;
  for (const name of ['busy', 'idle', 'archived', 'compacted']) await client.sessionAdd({ session: { name, vendor: `v-${name}` } });
  const busy = priced(4);
  await appendEach(client, 'busy', busy);
  const archived = priced(2, 10);
  await appendEach(client, 'archived', archived);
  await client.sessionSetArchived({ name: 'archived', archived: true });
  const compacted = priced(3, 20);
  await appendEach(client, 'compacted', compacted);
  compacted.push(...(await forceCompaction(client, first.dir, 'compacted')).map((b) => b.entry));
  const want = { busy, idle: [], archived, compacted } as Record<string, TranscriptEntry[]>;

  const check = async (c: StateClient, what: string): Promise<void> => {
    const { sessions: rows } = await c.sessionList();
    const { sessions: infos } = await c.sessionInfos();
    assert.deepEqual(infos.map((i) => i.session), rows, `${what}: every row, in list order`);
    for (const info of infos) {
      const name = info.session.name;
      const expected = sumOf(want[name] ?? []);
      assertUsage(info.usage, expected, `${what}: usage of ${name}`);
      assert.equal(info.lastTs, expected.lastTs, `${what}: lastTs of ${name}`);
      assert.equal(info.lastTs, (await c.transcriptLast({ name })).ts, `${what}: lastTs of ${name} agrees with transcript/last`);
    }
  };
  await check(client, 'while serving');
  await stop(first.server);
  // A fresh server has read no transcript yet: infos must still be complete.
  const second = await start(t, first.dir);
  await check(second.client, 'after a restart');
  await stop(second.server);
});
