// Logs a person can read: a server that cannot start says so in one line (what, which file, what
// to do) naming the file actually served, with the stack only at debug and then pointing into
// src/; --log-format pretty prints human lines. (--log-file, its 0600 and its lines:
// test/e2e/lifecycle.test.ts, whose spawned server writes one.)
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { formatLine } from '../../src/commands/pretty-log.js';
import { runToEnd, serveSocket, waitForStderr } from '../helpers/cli.js';
import { closeClean, startServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 30_000;

test('a state file that is not JSON stops serve with exit 1 and one line naming that file and what to do', { timeout: TIMEOUT }, async () => {
  const dir = tempDir();
  const state = path.join(dir, 'custom.json');
  writeFileSync(state, '{bad');
  const got = await runToEnd(['serve', '--state', state, '--socket', path.join(dir, 's.sock')]);
  assert.equal(got.code, 1);
  assert.equal(got.stdout, '');
  const lines = got.stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, `one line, got:\n${got.stderr}`);
  assert.match(lines[0] as string, /^herrscher-state: cannot open the state .*custom\.json: custom\.json: invalid JSON.*; fix .*custom\.json or move it away/);
  assert.ok(!got.stderr.includes('state.json'), 'names the file served, not state.json');
  assert.ok(!/\bat \S+ \(/.test(got.stderr), 'no stack at info');
  assert.equal(readFileSync(state, 'utf8'), '{bad', 'the file is left untouched');
});

test('a --socket in a missing folder stops serve with one line before the state dir is created', { timeout: TIMEOUT }, async () => {
  const dir = tempDir();
  const stateDir = path.join(dir, 'state');
  const socket = path.join(dir, 'no-such-folder', 's.sock');
  const got = await runToEnd(['serve', '--state', path.join(stateDir, 'state.json'), '--socket', socket]);
  assert.equal(got.code, 1);
  const lines = got.stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, `one line, got:\n${got.stderr}`);
  assert.match(lines[0] as string, /^herrscher-state: cannot listen on .*s\.sock: its folder .*no-such-folder does not exist; create its folder first, or pass another --socket$/);
  assert.ok(!existsSync(stateDir), 'nothing was created for the state');
});

test('at --log-level debug the start-up failure carries a stack with real names that points into src/', { timeout: TIMEOUT }, async () => {
  const dir = tempDir();
  const state = path.join(dir, 'custom.json');
  writeFileSync(state, '{bad');
  const got = await runToEnd(['serve', '--state', state, '--socket', path.join(dir, 's.sock'), '--log-level', 'debug', '--log-format', 'json']);
  assert.equal(got.code, 1);
  const record = got.stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; err?: { type: string; stack: string } })
    .find((r) => r.err);
  assert.ok(record?.err, `a debug record with the error:\n${got.stderr}`);
  assert.equal(record.err.type, 'StoreError', 'the class name is not minified');
  // `_StateStore`: the bundler's own name for a class that refers to itself (scripts/bundle-cli.mjs);
  // `async`: the load awaits the read that threw.
  assert.match(record.err.stack, /at (async )?_?StateStore\.load \(.*src\/store\/state-store\.ts:\d+:\d+\)/);
  assert.ok(!/cli(-main)?\.js:\d+:\d+/.test(record.err.stack), `no frame in the minified bundle:\n${record.err.stack}`);
  assert.match(got.stderr, /^herrscher-state: cannot open the state /m, 'and the one line for a person');
});

test('a state dir another server holds gets one line saying to stop it or pass another --state', { timeout: TIMEOUT }, async (t) => {
  // The holder is this process (a server in process holds the lock as `serve` does); the refused
  // start is the subject, so it is spawned.
  const first = await startServer(t);
  const got = await runToEnd(['serve', '--state', first.state, '--socket', path.join(first.dir, 'b.sock')]);
  assert.equal(got.code, 3, 'the lock-held code, which a program starting servers keys on');
  assert.equal(got.stderr.split('\n').filter(Boolean).length, 1, got.stderr);
  assert.match(got.stderr, new RegExp(`\\(pid ${process.pid}\\);.*stop that process, or pass another --state\\n$`));
  await closeClean(first);
});

test('--log-format pretty prints one human line per event on stderr', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const server = await serveSocket(t, path.join(dir, 'state.json'), path.join(dir, 's.sock'), ['--log-format', 'pretty']);
  await waitForStderr(server, /^\d\d:\d\d:\d\d\.\d{3} INFO  serving  state=\S+state\.json socket=\S+s\.sock/m);
  assert.ok(!server.stderr().includes('{"level"'), 'no JSON lines');
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
});

test('a pretty line shows time, level, message, fields and the error; the stack only when asked', () => {
  const line = JSON.stringify({ level: 50, time: Date.UTC(2026, 0, 1, 12, 0, 1, 234), pid: 1, msg: 'finishing writes failed', name: 'main', err: { type: 'StoreError', code: 'ENOSPC', message: 'write x: ENOSPC', stack: 'StoreError: write x\n    at f (/src/a.ts:1:2)' } });
  const plain = formatLine(line, { color: false, stacks: false });
  assert.match(plain, /^\d\d:\d\d:01\.234 ERROR finishing writes failed  name=main\n    StoreError ENOSPC: write x: ENOSPC\n$/);
  assert.match(formatLine(line, { color: false, stacks: true }), /\n    at f \(\/src\/a\.ts:1:2\)\n$/);
  assert.equal(formatLine('not json', { color: false, stacks: false }), 'not json');
});
