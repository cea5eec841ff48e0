// Lock handover: a host that holds the state's flock spawns the server with its open
// lock file as `--lock-fd N`. A non-Node host (Python's fcntl.flock, the flock(2) Herrscher's Go
// daemon takes) proves it across runtimes; the refusals name what failed. The process boundary
// is the subject here, so the built CLI is spawned, except for the checks of the descriptor a
// host passes: they look at open file descriptions and the file's inode, the same from any
// process, so they run through the Service `serve` opens, in this process, with the line `serve`
// prints (that a refusal at open exits 1 with that line is checked by the spawned refusals here
// and in lock-fd-twice).
import assert from 'node:assert/strict';
import { spawn as spawnChild } from 'node:child_process';
import { closeSync, existsSync, fstatSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { connect } from '../../src/client/client.js';
import { spawn } from '../../src/client/spawn.js';
import { startFailureLine } from '../../src/commands/start-failure.js';
import { tryFlock } from '../../src/store/lock.js';
import type { Ctx } from '../helpers/cli.js';
import { CLI, privateRuntimeDir, REPO, runCli } from '../helpers/cli.js';
import { startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 30_000;
const HOST = path.join(REPO, 'test/fixtures/lock_host.py');
const lockOf = (dir: string): string => path.join(dir, '.state.json.lock');
const env = (): NodeJS.ProcessEnv => ({ ...process.env, HERRSCHER_STATE_DIR: undefined, HERRSCHER_STATE_SOCKET: undefined, XDG_RUNTIME_DIR: privateRuntimeDir() });

/** Whether `pid` has exited (gone, or a zombie nobody reaped: the server was reparented). */
function exitedPid(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true; // no /proc entry: gone
  }
}

async function until(what: string, ok: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * The line `serve --lock-fd fd` prints (after `herrscher-state: `) when it refuses the descriptor:
 * the Service `serve` opens, with the store options it passes, in this process; it must refuse.
 */
async function lockFdRefusal(t: Ctx, dir: string, fd: number): Promise<string> {
  let refusal: unknown;
  await startServer(t, { dir, store: { durability: 'sync', lockFd: fd } }).then(
    () => assert.fail(`--lock-fd ${fd} was not refused`),
    (err: unknown) => (refusal = err),
  );
  return startFailureLine('state', statePathIn(dir), refusal);
}

test('a Python host holding the flock spawns the server with --lock-fd: host and socket writes land, kill -9 of the host ends the server, the next plain start gets the lock', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const state = statePathIn(dir);
  // Its own runtime dir: a server of an earlier test of this process still stopping on the shared
  // default socket would make this host's server serve stdio alone, with no socket to record.
  const hostEnv = { ...env(), XDG_RUNTIME_DIR: tempDir('hs-run-') };
  const host = spawnChild('python3', [HOST, process.execPath, CLI, state, lockOf(dir)], { stdio: ['pipe', 'pipe', 'pipe'], env: hostEnv });
  t.after(() => host.kill('SIGKILL'));
  let hostErr = '';
  host.stderr.on('data', (c: Buffer) => (hostErr += c.toString()));
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: host.stdout }).once('line', resolve);
    host.once('exit', (code) => reject(new Error(`the host exited ${code}: ${hostErr}`)));
  });
  const seen = JSON.parse(line) as { serverPid: number; added: { result?: { session: { name: string } } }; appended: { result?: { seq: number } } };
  assert.equal(seen.added.result?.session.name, 'fromhost', `the host's write over stdio: ${line}\n${hostErr}`);
  assert.equal(seen.appended.result?.seq, 0);

  // A bridge finds the host's server by its state file (the server recorded its socket) and writes.
  const client = await connect({ state, env: hostEnv });
  assert.equal((await client.status()).pid, seen.serverPid);
  await client.sessionAdd({ session: { name: 'fromsocket' } });
  await client.close();

  host.kill('SIGKILL');
  await until('the server exits after its host died', () => exitedPid(seen.serverPid));
  const names = (JSON.parse(readFileSync(state, 'utf8')) as { sessions: { name: string }[] }).sessions.map((s) => s.name).sort();
  assert.deepEqual(names, ['fromhost', 'fromsocket']);
  assert.match(readFileSync(path.join(dir, 'transcripts', 'fromhost.jsonl'), 'utf8'), /written by the host/);
  assert.equal(existsSync(path.join(dir, '.herrscher-state', 'state.json.serving.json')), false, 'the clean stop removed the record');

  // No handover now: a plain start takes the lock the dead host held.
  const next = runCli(t, ['serve', '--stdio', '--no-socket', '--state', state], { env: hostEnv, collectStdout: true });
  next.child.stdin?.write('{"jsonrpc":"2.0","id":1,"method":"session/list"}\n');
  await until('the plain start answers', () => next.stdout().includes('"id":1'));
  assert.match(next.stdout(), /fromsocket/);
  next.child.stdin?.end();
  assert.deepEqual(await next.exited, { code: 0, signal: null });
});

test('without --lock-fd, a daemon holding Herrscher\'s lock does not keep a server from serving, and keeps its lock', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const fd = openSync(lockOf(dir), 'w', 0o600);
  t.after(() => closeSync(fd));
  assert.ok(tryFlock(fd));
  const server = runCli(t, ['serve', '--stdio', '--no-socket', '--state', statePathIn(dir)], { env: env(), collectStdout: true });
  server.child.stdin?.write('{"jsonrpc":"2.0","id":1,"method":"session/add","params":{"session":{"name":"beside"}}}\n');
  await until('the server answers', () => server.stdout().includes('"id":1'));
  assert.match(server.stdout(), /"beside"/);
  const probe = openSync(lockOf(dir), 'r');
  try {
    assert.equal(tryFlock(probe), false, 'the daemon still holds its lock while the server serves');
  } finally {
    closeSync(probe);
  }
  server.child.stdin?.end();
  assert.deepEqual(await server.exited, { code: 0, signal: null });
});

test('--lock-fd on another file is refused: not the same device and inode', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const other = path.join(dir, 'other');
  writeFileSync(other, '');
  writeFileSync(lockOf(dir), '', { mode: 0o600 });
  const fd = openSync(other, 'r+');
  t.after(() => closeSync(fd));
  assert.ok(tryFlock(fd));
  assert.match(await lockFdRefusal(t, dir, fd), new RegExp(`--lock-fd ${fd} refused: descriptor ${fd} is not open on the lock file .*\\.state\\.json\\.lock`));
});

test('--lock-fd on the lock file that nobody locked is refused, and the lock is left free', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const fd = openSync(lockOf(dir), 'w', 0o600);
  t.after(() => closeSync(fd));
  assert.match(await lockFdRefusal(t, dir, fd), new RegExp(`--lock-fd ${fd} refused: the lock file .* is not locked`));
  assert.ok(tryFlock(fd), 'the refused server took no lock');
});

test('--lock-fd on the lock file while another open file holds the lock is refused', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const holder = openSync(lockOf(dir), 'w', 0o600);
  const passed = openSync(lockOf(dir), 'r');
  t.after(() => {
    closeSync(holder);
    closeSync(passed);
  });
  assert.ok(tryFlock(holder));
  assert.match(await lockFdRefusal(t, dir, passed), new RegExp(`the lock on .* is held, but not through descriptor ${passed}`));
  assert.equal(tryFlock(passed), false, 'the holder still holds it');
});

test('--lock-fd naming a descriptor that is not open is refused', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  // Far above the descriptors this process has open (checked: fstat fails on it).
  const unused = 900;
  assert.throws(() => fstatSync(unused), /EBADF/);
  assert.match(await lockFdRefusal(t, dir, unused), /--lock-fd 900 refused: descriptor 900 is not open/);
});

test('the typed client spawn() hands its lock over as --lock-fd 3, and the server leaves the lock with its host', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const fd = openSync(lockOf(dir), 'w', 0o600);
  t.after(() => closeSync(fd));
  assert.ok(tryFlock(fd));
  const server = spawn({ state: statePathIn(dir), cli: CLI, lockFd: fd, args: ['--no-socket'], env: env() });
  const { session } = await server.sessionAdd({ session: { name: 'spawned' } });
  assert.equal(session.name, 'spawned');
  await server.close();
  assert.equal(await server.exited, 0);
  const probe = openSync(lockOf(dir), 'r');
  try {
    assert.equal(tryFlock(probe), false, 'the host still holds its lock after the server exited');
  } finally {
    closeSync(probe);
  }
});
