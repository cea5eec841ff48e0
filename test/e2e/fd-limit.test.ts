// Under a low limit on open files (`ulimit -n 256`, macOS's default), many sessions each with a
// transcript and a participants journal: the idle names' open files must leave room for the
// writes. The bound is (limit - 384) / 2 idle names per kind, at least 16: 16 here; keeping them
// all open (the old behaviour, up to 1024 per kind) fails ~140 of these sessions' calls with
// EMFILE (about 113 sessions fit). The limit is 256, not 512 or 1024, so that fewer sessions pass
// the point where that fails: each call costs the server an fsync, and 700 sessions under 1024
// cost 5.8 s of CPU, 320 under 512 ~3.3 s, 160 here ~2.4 s. The sessions go through LANES
// lanes at once, each session's three calls in order: a lane's call waits on the log's fdatasync,
// which the lanes' records share; the names in flight hold their files on top of the bound's, so
// the old behaviour fails sooner, not later.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { connect } from '../../src/client/client.js';
import { cachedNamesForFdLimit } from '../../src/store/name-cache.js';
import { CLI } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const SESSIONS = 160;
const LANES = 8;

test('the bound on idle names leaves room under the soft limit on open files', () => {
  assert.equal(cachedNamesForFdLimit(1024), 320);
  assert.equal(cachedNamesForFdLimit(512), 64);
  assert.equal(cachedNamesForFdLimit(1_048_576), 1024);
  assert.equal(cachedNamesForFdLimit(256), 16);
});

test(`under ulimit -n 256, ${SESSIONS} sessions each get an append and a participant without EMFILE`, { timeout: 240_000 }, async (t) => {
  if (spawnSync('prlimit', ['--version']).status !== 0) return t.skip('needs prlimit (util-linux)');
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const server = spawn('prlimit', ['--nofile=256:256', process.execPath, CLI, 'serve', '--state', path.join(dir, 'state.json'), '--socket', socket, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  server.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
  t.after(() => {
    if (server.exitCode === null) server.kill('SIGKILL');
  });
  let client: Awaited<ReturnType<typeof connect>> | undefined;
  for (let i = 0; !client; i++) {
    try {
      client = await connect({ socket });
    } catch (err) {
      if (i > 300 || server.exitCode !== null) throw new Error(`the server did not start: ${String(err)}\n${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const failures: string[] = [];
  const session = async (i: number): Promise<void> => {
    const name = `s${i}`;
    const calls = [
      () => client.sessionAdd({ session: { name, channelID: `c${i}`, type: 'text', cmd: 'claude' } }),
      () => client.transcriptAppend({ name, entry: { ts: `t${i}`, role: 'user', text: 'hi' } }),
      () => client.participantsAppend({ name, userId: `u${i}` }),
    ];
    for (const call of calls) await call().catch((err: unknown) => failures.push(`${name}: ${(err as Error).message}`));
  };
  // Lane k takes sessions k, k + LANES, k + 2 LANES…: every session, LANES at a time.
  await Promise.all(
    Array.from({ length: LANES }, async (_, k) => {
      for (let i = k; i < SESSIONS; i += LANES) await session(i);
    }),
  );
  assert.deepEqual(failures.slice(0, 5), [], `${failures.length} calls failed`);
  const status = (await client.call('status', {})) as { healthy: boolean };
  assert.equal(status.healthy, true, JSON.stringify(status));
  await client.close();
  server.kill('SIGTERM');
  assert.equal(await exited, 0, stderr);
  // The stop's checkpoint syncs every file written since the last one: it too fits under the limit.
  const errors = stderr.split('\n').filter((l) => l.startsWith('{') && (JSON.parse(l) as { level: number }).level >= 50);
  assert.deepEqual(errors, [], 'nothing logged at error');
});
