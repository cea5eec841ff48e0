// The lifetime guard over the socket (in-process server, helpers/server.ts): every session-scoped write given a stale incarnation is
// refused with -32050 and the current one (null once the row is gone) and writes nothing; a purge
// removes the row, transcript, journal and usage record, and no late append can recreate them.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { StateClient } from '../../src/client/client.js';
import type { MethodName } from '../../src/protocol/table.js';
import { entry, forceCompaction, journalFile, metaFile, rpcError, TIMEOUT, transcriptFile } from '../helpers/feed.js';
import type { Ctx, InProcessServer } from '../helpers/server.js';
import { closeClean, startServer } from '../helpers/server.js';

const stop = (server: InProcessServer): Promise<void> => closeClean(server);

async function start(t: Ctx): Promise<{ dir: string; server: InProcessServer; client: StateClient }> {
  const server = await startServer(t);
  return { dir: server.dir, server, client: await server.client() };
}

/** Every file of the state dir (recursively, relative) with its bytes: equal snapshots, nothing written. */
function files(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const d of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = path.join(rel, d.name);
      if (d.isDirectory()) walk(r);
      else if (!d.isSocket()) out[r] = readFileSync(path.join(dir, r)).toString('base64');
    }
  };
  walk('');
  return out;
}

/** The guarded methods, each with params that would change something (name a). */
const GUARDED: { method: MethodName; params: Record<string, unknown> }[] = [
  { method: 'session/setResumeToken', params: { name: 'a', resumeToken: 'new' } },
  { method: 'session/setPausedReason', params: { name: 'a', paused_reason: 'cost' } },
  { method: 'session/setBudget', params: { name: 'a', cost_cap: 1, token_cap: 2, cohort_cost_cap: 3, cohort_token_cap: 4, paused_reason: 'x' } },
  { method: 'session/setBackendTarget', params: { name: 'a', vendor: 'codex', cmd: 'codex', modelId: 'gpt' } },
  { method: 'session/setArchived', params: { name: 'a', archived: true } },
  { method: 'transcript/append', params: { name: 'a', entry: entry('late') } },
  { method: 'participants/append', params: { name: 'a', userId: 'late' } },
  { method: 'session/remove', params: { name: 'a' } },
  { method: 'session/remove', params: { name: 'a', purge: true } },
];

const label = (g: (typeof GUARDED)[number]) => (g.params.purge ? `${g.method} with purge` : g.method);

/** Session a, its first lifetime ended and a second begun, with a transcript line and a participant. */
async function twoLifetimes(client: StateClient): Promise<{ stale: string; current: string }> {
  const { session: old } = await client.sessionAdd({ session: { name: 'a' } });
  await client.sessionRemove({ name: 'a' });
  const { session: now } = await client.sessionAdd({ session: { name: 'a', resumeToken: 'tok' } });
  await client.transcriptAppend({ name: 'a', entry: entry('kept') });
  await client.participantsAppend({ name: 'a', userId: 'kept' });
  assert.notEqual(old.incarnation, now.incarnation);
  return { stale: old.incarnation as string, current: now.incarnation as string };
}

for (const g of GUARDED) {
  test(`${label(g)} with a stale incarnation is refused with -32050 and the current incarnation, and writes nothing`, { timeout: TIMEOUT }, async (t) => {
    const { dir, server, client } = await start(t);
    const { stale, current } = await twoLifetimes(client);
    const before = files(dir);
    await assert.rejects(client.call(g.method, { ...g.params, incarnation: stale } as never), rpcError(-32050, { incarnation: current }));
    assert.deepEqual(files(dir), before, 'no file changed');
    // The same call with the current incarnation goes through: the guard refused only the stale one.
    await client.call(g.method, { ...g.params, incarnation: current } as never);
    assert.notDeepEqual(files(dir), before, 'the current incarnation writes');
    await stop(server);
  });

  test(`${label(g)} with an incarnation once the row is gone is refused with -32050 and incarnation null, and writes nothing`, { timeout: TIMEOUT }, async (t) => {
    const { dir, server, client } = await start(t);
    const { current } = await twoLifetimes(client);
    await client.sessionRemove({ name: 'a' });
    const before = files(dir);
    await assert.rejects(client.call(g.method, { ...g.params, incarnation: current } as never), rpcError(-32050, { incarnation: null }));
    assert.deepEqual(files(dir), before, 'no file changed');
    await stop(server);
  });
}

/** What is left of session a's files. */
const leftOf = (dir: string): string[] =>
  [transcriptFile(dir, 'a'), journalFile(dir, 'a'), metaFile(dir, 'a')].filter((f) => existsSync(f)).map((f) => path.relative(dir, f));

/** Names in a folder that belong to session a (a.jsonl, a.log, a.json, a.jsonl.compact…). */
const aFilesIn = (dir: string, rel: string): string[] =>
  existsSync(path.join(dir, rel)) ? readdirSync(path.join(dir, rel)).filter((n) => n.startsWith('a.')) : [];

test('session/remove with purge deletes the row, transcript, journal and usage record; a late append is refused with -32011 and recreates nothing', { timeout: 60_000 }, async (t) => {
  const { dir, server, client } = await start(t);
  await client.sessionAdd({ session: { name: 'a' } });
  await client.sessionAdd({ session: { name: 'b' } });
  await client.transcriptAppend({ name: 'a', entry: entry('first', { cost: 1 }) });
  await forceCompaction(client, dir, 'a'); // so a usage record (meta) exists
  await client.participantsAppend({ name: 'a', userId: 'u1' });
  assert.deepEqual(leftOf(dir), ['transcripts/a.jsonl', 'participants/a.log', '.herrscher-state/transcripts/a.json']);

  assert.deepEqual(await client.sessionRemove({ name: 'a', purge: true }), { removed: true });
  assert.deepEqual(leftOf(dir), [], 'every file of a is gone');
  assert.equal((await client.sessionFind({ name: 'a' })).session, null);

  await assert.rejects(client.transcriptAppend({ name: 'a', entry: entry('late') }), rpcError(-32011));
  await assert.rejects(client.participantsAppend({ name: 'a', userId: 'late' }), rpcError(-32011));
  for (const rel of ['transcripts', 'participants', '.herrscher-state/transcripts']) assert.deepEqual(aFilesIn(dir, rel), [], `nothing of a in ${rel}/`);
  assert.deepEqual((await client.transcriptUsage({ name: 'a' })).entries, 0, 'the usage record is gone');
  assert.deepEqual((await client.sessionList()).sessions.map((s) => s.name), ['b']);

  // A new lifetime of the name starts from nothing: seq 0, usage of its own entries only.
  await client.sessionAdd({ session: { name: 'a' } });
  assert.deepEqual(await client.transcriptAppend({ name: 'a', entry: entry('again', { cost: 0.25 }) }), { seq: 0 });
  const usage = await client.transcriptUsage({ name: 'a' });
  assert.deepEqual({ entries: usage.entries, cost: usage.cost }, { entries: 1, cost: 0.25 });
  await stop(server);
});

test('appends racing a purge from another connection either land before it or are refused; no file survives', { timeout: TIMEOUT }, async (t) => {
  const { dir, server, client } = await start(t);
  const other = await server.client('ndjson');
  await client.sessionAdd({ session: { name: 'a' } });
  await client.transcriptAppend({ name: 'a', entry: entry('first') });

  const N = 300;
  const appends = Array.from({ length: N }, (_, i) =>
    (i % 2 ? other.participantsAppend({ name: 'a', userId: `u${i}` }) : other.transcriptAppend({ name: 'a', entry: entry(`e${i}`) })).then(
      () => 'ok',
      (err: unknown) => {
        rpcError(-32011)(err);
        return 'refused';
      },
    ),
  );
  const purge = client.sessionRemove({ name: 'a', purge: true });
  const outcomes = await Promise.all(appends);
  assert.deepEqual(await purge, { removed: true });

  const firstRefused = outcomes.indexOf('refused');
  if (firstRefused !== -1) assert.deepEqual(outcomes.slice(firstRefused).filter((o) => o === 'ok'), [], 'no append succeeds after one was refused');
  assert.deepEqual(leftOf(dir), [], 'no file of a survives the purge');
  for (const rel of ['transcripts', 'participants', '.herrscher-state/transcripts']) assert.deepEqual(aFilesIn(dir, rel), [], `nothing of a in ${rel}/`);
  await stop(server);
});

test('a request pipelined right behind a purge on the same connection is refused with -32011', { timeout: TIMEOUT }, async (t) => {
  const { dir, server, client } = await start(t);
  await client.sessionAdd({ session: { name: 'a' } });
  await client.transcriptAppend({ name: 'a', entry: entry('first') });
  const [purge, late, lateUser] = await Promise.allSettled([
    client.sessionRemove({ name: 'a', purge: true }),
    client.transcriptAppend({ name: 'a', entry: entry('late') }),
    client.participantsAppend({ name: 'a', userId: 'late' }),
  ]);
  assert.deepEqual(purge, { status: 'fulfilled', value: { removed: true } });
  assert.equal(late.status, 'rejected');
  rpcError(-32011)(late.reason);
  assert.equal(lateUser.status, 'rejected');
  rpcError(-32011)(lateUser.reason);
  assert.deepEqual(leftOf(dir), []);
  await stop(server);
});
