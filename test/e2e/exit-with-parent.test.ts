// --exit-with-parent: a server whose parent is gone stops in order and releases the state's lock,
// also when the parent died before the server had run a line (it passes its pid with
// --parent-pid), so an orphan never serves on holding the lock. The parent here is a node script
// that spawns the server with its own stdout and stderr, writes the server's pid and exits: the
// test's pipes close only once the server has exited too.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, privateRuntimeDir, REPO, serveSocket } from '../helpers/cli.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { openSocket } from '../helpers/wire.js';

const TIMEOUT = 30_000;

/**
 * A parent that spawns `serve` with `args` (`$PARENT` becomes its own pid) sharing its stdout and
 * stderr, prints the server's pid, and exits: at once, or when a line arrives on its stdin.
 */
const PARENT = `
const { spawn } = require('node:child_process');
const [args, when] = JSON.parse(process.argv[1]);
const child = spawn(process.execPath, args.map((a) => (a === '$PARENT' ? String(process.pid) : a)), { stdio: ['ignore', 'inherit', 'inherit'] });
process.stdout.write(child.pid + '\\n', () => (when === 'at once' ? process.exit(0) : process.stdin.once('data', () => process.exit(0))));
`;

interface Parented {
  /** Resolves once the parent and the server have both exited (the last holders of the pipes). */
  closed: Promise<void>;
  stderr(): string;
  serverPid: Promise<number>;
  /** Makes a parent started with 'on stdin' exit. */
  exitParent(): void;
}

function spawnThroughParent(t: { after(f: () => void): void }, serveArgs: string[], when: 'at once' | 'on stdin'): Parented {
  const env = { ...process.env, NODE_OPTIONS: undefined, HERRSCHER_STATE_DIR: undefined, HERRSCHER_STATE_SOCKET: undefined, XDG_RUNTIME_DIR: privateRuntimeDir() };
  const parent = spawn(process.execPath, ['-e', PARENT, JSON.stringify([[CLI, 'serve', ...serveArgs], when])], { cwd: REPO, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let pid: number | undefined;
  const serverPid = new Promise<number>((resolve) =>
    parent.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /^(\d+)\n/.exec(out);
      if (m && pid === undefined) resolve((pid = Number(m[1])));
    }),
  );
  parent.stderr.on('data', (c: Buffer) => (err += c.toString()));
  parent.stdin.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => parent.once('close', () => resolve()));
  // A server that is not stopped would serve on: never left behind by a failing test.
  t.after(() => {
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  return { closed, stderr: () => err, serverPid, exitParent: () => parent.stdin.write('go\n') };
}

/** Resolves once `socket` accepts a connection. */
async function listening(socket: string): Promise<void> {
  for (;;) {
    try {
      (await openSocket(socket)).destroy();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

const records = (stderr: string): { msg?: string; why?: string; code?: number }[] =>
  stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg?: string; why?: string; code?: number });

test('--parent-pid: a parent that exits right after spawning the server is noticed; the orphan exits 0 and the lock is free', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const state = statePathIn(dir);
  const socket = path.join(dir, 's.sock');
  const run = spawnThroughParent(t, ['--state', state, '--socket', socket, '--log-format', 'json', '--exit-with-parent', '--parent-pid', '$PARENT'], 'at once');
  await run.serverPid;
  await run.closed;
  const why = records(run.stderr()).filter((r) => r.why !== undefined).map((r) => r.why);
  assert.deepEqual(why, ['parent process gone'], run.stderr());
  // The lock is free: another server takes the same state.
  const next = await serveSocket(t, state, path.join(dir, 't.sock'));
  next.child.kill('SIGTERM');
  assert.deepEqual(await next.exited, { code: 0, signal: null });
});

test('--exit-with-parent: a parent that exits once the server serves stops it in order', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const run = spawnThroughParent(t, ['--state', statePathIn(dir), '--socket', socket, '--log-format', 'json', '--exit-with-parent'], 'on stdin');
  await run.serverPid;
  await listening(socket);
  run.exitParent();
  await run.closed;
  const got = records(run.stderr());
  assert.deepEqual(got.filter((r) => r.why !== undefined).map((r) => r.why), ['parent process gone'], run.stderr());
  assert.equal(got.find((r) => r.msg === 'stopped')?.code, 0, run.stderr());
});
