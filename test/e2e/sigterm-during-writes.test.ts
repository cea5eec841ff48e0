// SIGTERM while state.json is being replaced must run the ordered stop (exit 0, writes
// finished), not kill the process: a library that loads signal-exit (write-file-atomic did)
// re-raises the signal when its handler is the only one left, which it is once serve's own
// once-listener has run.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { connect } from '../../src/client/client.js';
import { CLI } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

test('SIGTERM in the middle of state.json writes stops in order with 0', { timeout: 60_000 }, async (t) => {
  for (let round = 0; round < 5; round++) {
    const dir = tempDir();
    const socket = path.join(dir, 's.sock');
    const server = spawn(process.execPath, [CLI, 'serve', '--state', path.join(dir, 'state.json'), '--socket', socket, '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    server.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => server.once('exit', (code, signal) => resolve({ code, signal })));
    t.after(() => {
      if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
    });
    let client: Awaited<ReturnType<typeof connect>> | undefined;
    for (let i = 0; !client; i++) {
      try {
        client = await connect({ socket });
      } catch (err) {
        if (i > 200 || server.exitCode !== null) throw new Error(`the server did not start: ${String(err)}\n${stderr}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    }
    const c = client;
    // Writes back to back, so one is nearly always in flight (each a state.json replace + fsync).
    let stop = false;
    const writer = (async () => {
      for (let i = 0; !stop; i++) {
        await c.sessionAdd({ session: { name: `s${i}`, channelID: `c${i}`, type: 'text', cmd: 'x'.repeat(2000) } }).catch(() => (stop = true));
      }
    })();
    await new Promise((r) => setTimeout(r, 150 + 100 * round));
    server.kill('SIGTERM');
    await writer;
    assert.deepEqual(await exited, { code: 0, signal: null }, stderr);
  }
});
