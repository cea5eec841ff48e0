// Under a low limit on open files (`ulimit -n 1024`), many sessions each with a transcript and a
// participants journal: the idle names' open files must leave room for the writes. With 1024
// idle objects of each kind kept open, ~420 of these writes failed with EMFILE.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { connect } from '../../src/client/client.js';
import { cachedNamesForFdLimit } from '../../src/store/name-cache.js';
import { CLI } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const SESSIONS = 700;

test('the bound on idle names leaves room under the soft limit on open files', () => {
  assert.equal(cachedNamesForFdLimit(1024), 320);
  assert.equal(cachedNamesForFdLimit(1_048_576), 1024);
  assert.equal(cachedNamesForFdLimit(256), 16);
});

test(`under ulimit -n 1024, ${SESSIONS} sessions each get an append and a participant without EMFILE`, { timeout: 240_000 }, async (t) => {
  if (spawnSync('prlimit', ['--version']).status !== 0) return t.skip('needs prlimit (util-linux)');
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const server = spawn('prlimit', ['--nofile=1024:1024', process.execPath, CLI, 'serve', '--state', path.join(dir, 'state.json'), '--socket', socket, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
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
  for (let i = 0; i < SESSIONS; i++) {
    const name = `s${i}`;
    const calls = [
      () => client.sessionAdd({ session: { name, channelID: `c${i}`, type: 'text', cmd: 'claude' } }),
      () => client.transcriptAppend({ name, entry: { ts: `t${i}`, role: 'user', text: 'hi' } }),
      () => client.participantsAppend({ name, userId: `u${i}` }),
    ];
    for (const call of calls) await call().catch((err: unknown) => failures.push(`${name}: ${(err as Error).message}`));
  }
  assert.deepEqual(failures.slice(0, 5), [], `${failures.length} calls failed`);
  const status = (await client.call('status', {})) as { healthy: boolean };
  assert.equal(status.healthy, true, JSON.stringify(status));
  await client.close();
  server.kill('SIGTERM');
  assert.equal(await exited, 0, stderr);
});
