// One server per state file, also through a handed-over lock: a host that passes the same locked
// descriptor to two `serve --lock-fd 3` gets the second refused (exit 3, the lock's code, naming --lock-fd), since
// flock cannot tell apart two processes sharing one open file description. The first serves on.
import assert from 'node:assert/strict';
import { spawn as spawnChild } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { tryFlock } from '../../src/store/lock.js';
import { CLI, privateRuntimeDir } from '../helpers/cli.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 30_000;
const env = (): NodeJS.ProcessEnv => ({ ...process.env, HERRSCHER_STATE_DIR: undefined, HERRSCHER_STATE_SOCKET: undefined, XDG_RUNTIME_DIR: privateRuntimeDir() });

function serve(state: string, fd: number) {
  const child = spawnChild(process.execPath, [CLI, 'serve', '--stdio', '--no-socket', '--state', state, '--lock-fd', '3', '--log-level', 'warn'], {
    stdio: ['pipe', 'pipe', 'pipe', fd],
    env: env(),
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

async function until(what: string, ok: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('two serve --lock-fd 3 on the same locked descriptor: the second exits 3 naming --lock-fd; the first keeps serving', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const state = statePathIn(dir);
  const fd = openSync(path.join(dir, '.state.json.lock'), 'w', 0o600);
  t.after(() => closeSync(fd));
  assert.ok(tryFlock(fd), 'the host holds the lock');
  const first = serve(state, fd);
  t.after(() => first.child.kill('SIGKILL'));
  first.child.stdin?.write('{"jsonrpc":"2.0","id":1,"method":"session/list"}\n');
  await until('the first server answers', () => first.stdout().includes('"id":1'));

  const second = serve(state, fd);
  t.after(() => second.child.kill('SIGKILL'));
  second.child.stdin?.write('{"jsonrpc":"2.0","id":1,"method":"session/add","params":{"session":{"name":"second"}}}\n');
  second.child.stdin?.end();
  assert.equal(await second.exited, 3, second.stderr());
  assert.match(second.stderr(), /another server is already serving .*--lock-fd 3 refused/);

  first.child.stdin?.write('{"jsonrpc":"2.0","id":2,"method":"session/add","params":{"session":{"name":"first"}}}\n');
  await until('the first server answers again', () => first.stdout().includes('"id":2'));
  first.child.stdin?.end();
  assert.equal(await first.exited, 0, first.stderr());
  const names = (JSON.parse(readFileSync(state, 'utf8')) as { sessions: { name: string }[] }).sessions.map((s) => s.name);
  assert.deepEqual(names, ['first']);
});
