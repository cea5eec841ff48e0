// `herrscher-state call` and `--version` as an operator runs them at a shell (`--help`:
// cli-help.test.ts): the
// result as JSON on stdout and exit 0, or the error on stderr and exit 1. The commands are spawned
// (the CLI is the subject); the server they call runs in process.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { methods } from '../../src/protocol/table.js';
import { REPO, runCli, runToEnd, waitForStderr } from '../helpers/cli.js';
import { closeClean, startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

/** A safety net only: a hung command fails the test instead of the run. Generous: on a 2-core machine under load 20, correct tests took over 30 s. */
const TIMEOUT = 120_000;
const VERSION = (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;

test('call state/get --socket P prints the JSON result and exits 0, in both framings', { timeout: TIMEOUT }, async (t) => {
  const server = await startServer(t);
  const { socket } = server;
  const add = await runToEnd(['call', 'session/add', '{"session":{"name":"main","cmd":"claude"}}', '--socket', socket]);
  assert.equal(add.code, 0, add.stderr);
  const { session } = JSON.parse(add.stdout) as { session: { incarnation: string } };
  assert.match(session.incarnation, /^inc_[A-Z2-7]{26}$/);
  for (const framing of ['lsp', 'ndjson']) {
    const got = await runToEnd(['call', 'state/get', '--socket', socket, '--framing', framing]);
    assert.equal(got.code, 0, got.stderr);
    assert.equal(got.stderr, '');
    const result = JSON.parse(got.stdout) as { state: unknown; revision: unknown };
    methods['state/get'].result.parse(result);
    assert.deepEqual(result.state, {
      home: { id: '', type: '' },
      sessions: [{ id: 's_main', incarnation: session.incarnation, name: 'main', channelID: '', type: '', cmd: 'claude' }],
    }, `over ${framing}`);
    assert.equal(typeof result.revision, 'number');
  }
  await closeClean(server);
});

test('call reads the socket from HERRSCHER_STATE_SOCKET when --socket is absent', { timeout: TIMEOUT }, async (t) => {
  const server = await startServer(t);
  const { socket } = server;
  const got = await runToEnd(['call', 'state/qualifiedName', '{"name":"x"}'], { env: { ...process.env, HERRSCHER_STATE_SOCKET: socket } });
  assert.equal(got.code, 0, got.stderr);
  assert.deepEqual(JSON.parse(got.stdout), { qualifiedName: 'x' });
  await closeClean(server);
});

test('a failing call prints error <code> on stderr, nothing on stdout, and exits 1', { timeout: TIMEOUT }, async (t) => {
  const server = await startServer(t);
  const { dir, socket } = server;
  const cases: [string[], number][] = [
    [['call', 'no/such', '--socket', socket], -32601],
    [['call', 'transcript/read', '{"name":"../x"}', '--socket', socket], -32602],
    [['call', 'transcript/append', '{"name":"ghost","entry":{"ts":"t","role":"user","text":"x"}}', '--socket', socket], -32011],
  ];
  for (const [args, code] of cases) {
    const got = await runToEnd(args);
    assert.equal(got.code, 1, `${args.join(' ')}: ${got.stderr}`);
    assert.equal(got.stdout, '', `${args.join(' ')} prints nothing on stdout`);
    assert.match(got.stderr, new RegExp(`^error ${code}\\b`), `${args.join(' ')}`);
    assert.ok(!got.stderr.includes(dir), 'the error names no absolute path');
  }
  // A mistyped method: call prints the nearest ones (the message and data.suggestions).
  const typo = await runToEnd(['call', 'sesion/lst', '--socket', socket]);
  assert.equal(typo.code, 1, typo.stderr);
  assert.match(typo.stderr, /^error -32601: unknown method "sesion\/lst"; did you mean "session\/list"/);
  assert.match(typo.stderr, /"suggestions": \[\n\s+"session\/list"/);
  await closeClean(server);
});

test('--version prints the package version and exits 0', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd(['--version']);
  assert.deepEqual({ code: got.code, stdout: got.stdout, stderr: got.stderr }, { code: 0, stdout: `${VERSION}\n`, stderr: '' });
});

test('call with no server at the socket exits 1 with a message naming the socket', { timeout: TIMEOUT }, async () => {
  const dir = tempDir();
  const socket = path.join(dir, 'nobody.sock');
  const got = await runToEnd(['call', 'state/get', '--socket', socket, '--timeout', '200']);
  assert.equal(got.code, 1, got.stderr);
  assert.equal(got.stdout, '');
  assert.match(got.stderr, /^herrscher-state call: /);
  assert.ok(got.stderr.includes(socket), `the message names the socket: ${got.stderr}`);
  assert.ok(got.stderr.includes(`start one with \`herrscher-state serve --socket ${socket}\``), `and the command that starts one: ${got.stderr}`);
});

test('call with PARAMS-JSON that is not JSON exits 2 without connecting', { timeout: TIMEOUT }, async () => {
  const dir = tempDir();
  const got = await runToEnd(['call', 'state/get', '{nope', '--socket', path.join(dir, 'nobody.sock')]);
  assert.equal(got.code, 2, got.stderr);
  assert.match(got.stderr, /PARAMS-JSON is not JSON/);
});

test('serve --announce prints where it listens and a call line that works as printed', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const server = runCli(t, ['serve', '--socket', socket, '--state', statePathIn(dir), '--announce', '--log-level', 'warn']);
  const [, tryLine] = (await waitForStderr(server, /^try: (.+)$/m)) as unknown as [string, string];
  assert.ok(server.stderr().includes(socket) || server.stderr().includes(path.relative(REPO, socket)), `names the socket: ${server.stderr()}`);
  const [cmd, ...args] = tryLine.split(' ');
  assert.equal(cmd, 'node');
  const got = spawnSync(process.execPath, args, { cwd: REPO, encoding: 'utf8', timeout: TIMEOUT });
  assert.equal(got.status, 0, `${tryLine}: ${got.stderr}`);
  assert.match(tryLine, / call session\/list --socket /);
  assert.deepEqual(JSON.parse(got.stdout), { sessions: [] });
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
});
