// `herrscher-state tail` and `herrscher-state sessions` as an operator runs them against a
// running server's socket: readable lines (time, role, cost, text), a follow mode fed by the
// change feed, and a session table. The commands are spawned (the CLI is the subject); the server
// they talk to runs in process.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Child } from '../helpers/cli.js';
import { runCli, runToEnd } from '../helpers/cli.js';
import { entry, TIMEOUT } from '../helpers/feed.js';
import type { Ctx, InProcessServer } from '../helpers/server.js';
import { closeClean, startServer } from '../helpers/server.js';

const stop = (server: InProcessServer): Promise<void> => closeClean(server);

async function start(t: Ctx) {
  const server = await startServer(t);
  return { socket: server.socket, server, client: await server.client() };
}

/** Resolves once the child's stdout has `count` complete lines; rejects when it exits first. */
function waitForLines(c: Child, count: number): Promise<string[]> {
  const lines = () => c.stdout().split('\n').slice(0, -1);
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      if (lines().length < count) return false;
      c.child.stdout?.off('data', check);
      resolve(lines());
      return true;
    };
    // track() registered its collector first, so each chunk is in stdout() when this runs.
    c.child.stdout?.on('data', check);
    if (check()) return;
    void c.exited.then((e) => {
      if (!check()) reject(new Error(`exited (${JSON.stringify(e)}) with ${lines().length} of ${count} lines; stdout:\n${c.stdout()}\nstderr:\n${c.stderr()}`));
    });
  });
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A line showing, in this order, the time, the role, the cost (when given; trailing zeros allowed) and the text. */
const readable = (ts: string, role: string, cost: string | undefined, text: string) =>
  new RegExp(`^${esc(ts)}\\s+${role}\\s+${cost === undefined ? '' : `\\$?${esc(cost)}0*\\s+`}${esc(text)}$`);

test('tail NAME -n 2 prints the two newest entries, one readable line each: time, role, cost, text', { timeout: TIMEOUT }, async (t) => {
  const { socket, server, client } = await start(t);
  await client.sessionAdd({ session: { name: 'main' } });
  await client.transcriptAppend({ name: 'main', entry: entry('oldest', { ts: '2026-07-26T00:00:00Z' }) });
  await client.transcriptAppend({ name: 'main', entry: entry('older', { ts: '2026-07-26T00:00:01Z', role: 'assistant', cost: 0.5 }) });
  await client.transcriptAppend({ name: 'main', entry: entry('fix the build', { ts: '2026-07-26T00:00:02Z' }) });
  await client.transcriptAppend({ name: 'main', entry: entry('done', { ts: '2026-07-26T00:00:05Z', role: 'assistant', cost: 0.004 }) });

  const got = await runToEnd(['tail', 'main', '-n', '2', '--socket', socket]);
  assert.deepEqual({ code: got.code, stderr: got.stderr }, { code: 0, stderr: '' });
  const lines = got.stdout.split('\n');
  assert.equal(lines.pop(), '', 'ends with a newline');
  assert.equal(lines.length, 2, `two lines:\n${got.stdout}`);
  assert.match(lines[0] as string, readable('2026-07-26T00:00:02Z', 'user', undefined, 'fix the build'));
  assert.match(lines[1] as string, readable('2026-07-26T00:00:05Z', 'assistant', '0.004', 'done'));
  await stop(server);
});

test('tail NAME -f prints the newest entry, then each entry another client appends, until SIGTERM', { timeout: TIMEOUT }, async (t) => {
  const { socket, server, client } = await start(t);
  await client.sessionAdd({ session: { name: 'main' } });
  await client.sessionAdd({ session: { name: 'other' } });
  await client.transcriptAppend({ name: 'main', entry: entry('before', { ts: '2026-07-26T00:00:00Z' }) });
  await client.transcriptAppend({ name: 'main', entry: entry('newest before', { ts: '2026-07-26T00:00:01Z' }) });

  const tail = runCli(t, ['tail', 'main', '-f', '-n', '1', '--socket', socket]);
  assert.match((await waitForLines(tail, 1))[0] as string, readable('2026-07-26T00:00:01Z', 'user', undefined, 'newest before'));

  await client.transcriptAppend({ name: 'main', entry: entry('one', { ts: '2026-07-26T00:01:00Z', role: 'assistant', cost: 0.25 }) });
  await client.transcriptAppend({ name: 'other', entry: entry('not main') });
  await client.transcriptAppend({ name: 'main', entry: entry('two', { ts: '2026-07-26T00:02:00Z' }) });
  const lines = await waitForLines(tail, 3);
  assert.equal(lines.length, 3, `stdout:\n${tail.stdout()}`);
  assert.match(lines[1] as string, readable('2026-07-26T00:01:00Z', 'assistant', '0.25', 'one'));
  assert.match(lines[2] as string, readable('2026-07-26T00:02:00Z', 'user', undefined, 'two'));

  tail.child.kill('SIGTERM');
  assert.deepEqual(await tail.exited, { code: 0, signal: null }, `stderr:\n${tail.stderr()}`);
  assert.equal(tail.stdout().split('\n').length, 4, 'nothing printed for the other session');
  await stop(server);
});

test('sessions prints a table with NAME, VENDOR, ARCHIVED, LAST ACTIVITY, ENTRIES and COST, one line per session', { timeout: TIMEOUT }, async (t) => {
  const { socket, server, client } = await start(t);
  await client.sessionAdd({ session: { name: 'main', vendor: 'claude' } });
  await client.sessionAdd({ session: { name: 'side-quest', vendor: 'codex' } });
  await client.sessionAdd({ session: { name: 'fresh' } });
  await client.sessionSetArchived({ name: 'side-quest', archived: true });
  await client.transcriptAppend({ name: 'main', entry: entry('a', { ts: '2026-07-26T00:00:00Z', cost: 0.5 }) });
  await client.transcriptAppend({ name: 'main', entry: entry('b', { ts: '2026-07-26T00:00:09Z', cost: 0.25 }) });
  await client.transcriptAppend({ name: 'side-quest', entry: entry('c', { ts: '2026-07-20T10:00:00Z', cost: 1 }) });

  const got = await runToEnd(['sessions', '--socket', socket]);
  assert.deepEqual({ code: got.code, stderr: got.stderr }, { code: 0, stderr: '' });
  const lines = got.stdout.replace(/\n$/, '').split('\n');
  const header = lines[0] as string;
  assert.match(header, /^NAME\s+VENDOR\s+ARCHIVED\s+LAST ACTIVITY\s+ENTRIES\s+COST$/);
  assert.equal(lines.length, 4, `a header and one line per session:\n${got.stdout}`);

  // Cells by the header's column starts (a column may be empty).
  const starts = ['NAME', 'VENDOR', 'ARCHIVED', 'LAST ACTIVITY', 'ENTRIES', 'COST'].map((h) => header.indexOf(h));
  const cells = (line: string) => starts.map((s, i) => line.slice(s, starts[i + 1]).trim());
  const rows = Object.fromEntries(lines.slice(1).map((l) => [cells(l)[0], cells(l)]));
  assert.deepEqual(Object.keys(rows), ['main', 'side-quest', 'fresh'], 'in list order');
  const [, vendor, archived, last, entries, cost] = rows.main as string[];
  assert.deepEqual({ vendor, last, entries }, { vendor: 'claude', last: '2026-07-26T00:00:09Z', entries: '2' });
  assert.match(cost as string, /^\$?0\.75/);
  assert.doesNotMatch(archived as string, /yes|true/i);
  assert.match((rows['side-quest'] as string[])[2] as string, /yes|true/i);
  assert.deepEqual((rows['side-quest'] as string[]).slice(3, 5), ['2026-07-20T10:00:00Z', '1']);
  assert.equal((rows.fresh as string[])[4], '0');
  await stop(server);
});
