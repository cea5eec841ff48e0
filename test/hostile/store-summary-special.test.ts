// Hostile side files: a transcript's `.summary` (a shortcut appends keep) replaced by a
// folder or a FIFO is ignored and logged; the transcript is scanned instead. Reads and
// session/infos answer as with no summary; nothing hangs (a FIFO nobody writes would hold a read
// forever), and SIGTERM still stops the server in order.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { connect } from '../../src/client/client.js';
import { newSession, openIn } from '../helpers/store.js';
import { privateRuntimeDir, runCli } from '../helpers/cli.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 30_000;

/** A dir whose session "s" has 3 entries (too few for a summary), closed cleanly, and where its summary would be. */
async function closedDir(): Promise<{ dir: string; summary: string }> {
  const dir = tempDir();
  const store = await openIn(dir);
  await store.addSession(newSession('s'));
  for (let i = 0; i < 3; i++) await store.appendTranscript('s', { ts: `t${i}`, role: 'user', text: `e${i}`, cost: 0.5, tokens_in: 2 });
  await store.close();
  return { dir, summary: path.join(dir, '.herrscher-state', 'transcripts', 's.summary') };
}

const plant: Record<string, (file: string) => void> = {
  'a directory': (file) => mkdirSync(file),
  'a FIFO': (file) => execFileSync('mkfifo', [file]),
};

for (const [what, make] of Object.entries(plant)) {
  test(`a .summary that is ${what} is ignored and logged: usage, last and session/infos answer from a scan`, { timeout: TIMEOUT }, async (t) => {
    const { dir, summary } = await closedDir();
    mkdirSync(path.dirname(summary), { recursive: true, mode: 0o700 });
    make(summary);
    const errors: string[] = [];
    const store = await openIn(dir, { error: (m) => errors.push(m) });
    t.after(() => store.close());
    const usage = await store.transcriptUsage('s');
    assert.equal(usage.entries, 3);
    assert.equal(usage.cost, 1.5);
    assert.equal(await store.lastTranscriptTs('s'), 't2');
    const infos = await store.sessionInfos();
    assert.equal(infos[0]?.usage.entries, 3);
    assert.ok(errors.some((e) => e.includes('s.summary is not a regular file')), errors.join('\n'));
  });
}

test('a FIFO at .summary: session/infos answers over the socket and SIGTERM stops the server with exit 0', { timeout: TIMEOUT }, async (t) => {
  const { dir, summary } = await closedDir();
  mkdirSync(path.dirname(summary), { recursive: true, mode: 0o700 });
  plant['a FIFO']!(summary);
  const socket = path.join(tempDir('hs-sock-'), 's.sock');
  const server = runCli(t, ['serve', '--socket', socket, '--state', statePathIn(dir), '--log-level', 'warn'],
    { env: { ...process.env, XDG_RUNTIME_DIR: privateRuntimeDir() } });
  const client = await (async () => {
    for (let i = 0; ; i++) {
      try {
        return await connect({ socket });
      } catch (err) {
        if (i > 200) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  })();
  const infos = await client.call('session/infos', {}) as { sessions: { usage: { entries: number } }[] };
  assert.equal(infos.sessions[0]?.usage.entries, 3);
  await client.close();
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr());
});
