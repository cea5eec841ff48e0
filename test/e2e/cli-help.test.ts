// The CLI as an operator meets it: per-command help with examples, did-you-mean for a mistyped
// command or flag (exit 2, nothing on stdout), `call METHOD -` reading params from stdin, and
// SIGHUP ending `serve` as SIGTERM does.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { runCli, runToEnd, serveSocket } from '../helpers/cli.js';
import { startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { editDistance, suggest } from '../../src/commands/suggest.js';

const TIMEOUT = 30_000;
const COMMANDS = ['serve', 'call', 'tail', 'sessions', 'status', 'socket'];

test('--help lists every command with its summary and the exit codes, and exits 0', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd(['--help']);
  assert.equal(got.code, 0, got.stderr);
  for (const c of COMMANDS) assert.match(got.stdout, new RegExp(`^  ${c} +\\S`, 'm'), c);
  assert.match(got.stdout, /^Exit codes:$/m);
  assert.match(got.stdout, /HERRSCHER_STATE_SOCKET/);
  assert.equal(got.stderr, '');
});

for (const c of COMMANDS) {
  test(`${c} --help prints its usage, flags and examples`, { timeout: TIMEOUT }, async () => {
    const got = await runToEnd([c, '--help']);
    assert.equal(got.code, 0, got.stderr);
    assert.match(got.stdout, new RegExp(`^  herrscher-state ${c}\\b`, 'm'));
    assert.match(got.stdout, /^Flags:$/m);
    assert.match(got.stdout, /^Examples:\n  herrscher-state /m);
    assert.match(got.stdout, /-h, --help/);
    assert.equal(got.stderr, '');
  });
}

test('help COMMAND prints the same as COMMAND --help', { timeout: TIMEOUT }, async () => {
  const [viaFlag, viaHelp] = await Promise.all([runToEnd(['tail', '--help']), runToEnd(['help', 'tail'])]);
  assert.deepEqual({ code: viaHelp.code, stdout: viaHelp.stdout }, { code: 0, stdout: viaFlag.stdout });
});

test('serve --help documents every serve flag', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd(['serve', '--help']);
  for (const flag of ['--state FILE', '--stdio', '--socket PATH', '--durability', '--max-message-bytes', '--log-level', '--log-file', '--announce']) {
    assert.ok(got.stdout.includes(flag), flag);
  }
});

test('a mistyped command exits 2 naming the closest command, with nothing on stdout', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd(['tial', 'main']);
  assert.deepEqual(
    { code: got.code, stdout: got.stdout, stderr: got.stderr },
    { code: 2, stdout: '', stderr: 'herrscher-state: unknown command "tial"; did you mean tail?\nRun herrscher-state --help for usage.\n' },
  );
});

test('a command far from every known one exits 2 without a guess', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd(['frobnicate']);
  assert.equal(got.code, 2);
  assert.equal(got.stderr, 'herrscher-state: unknown command "frobnicate"\nRun herrscher-state --help for usage.\n');
});

test('a mistyped flag exits 2 naming the closest flag of that command', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd(['tail', 'main', '--folow']);
  assert.deepEqual(
    { code: got.code, stdout: got.stdout, stderr: got.stderr },
    { code: 2, stdout: '', stderr: 'herrscher-state tail: unknown flag --folow for tail; did you mean --follow?\nRun herrscher-state tail --help for usage.\n' },
  );
});

test('a flag of another command is unknown to this one', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd(['call', 'state/get', '--stdio']);
  assert.equal(got.code, 2);
  assert.match(got.stderr, /^herrscher-state call: unknown flag --stdio for call\n/);
});

test('a flag without its value exits 2 saying what value it needs', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd(['serve', '--state']);
  assert.equal(got.code, 2);
  assert.match(got.stderr, /^herrscher-state serve: --state needs a value \(FILE\)\n/);
});

test('no command prints the help on stderr and exits 2', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd([]);
  assert.equal(got.code, 2);
  assert.equal(got.stdout, '');
  assert.match(got.stderr, /^Commands:$/m);
});

test('the suggestion is the nearest word within a third of the typed length', () => {
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(editDistance('', 'abc'), 3);
  assert.equal(editDistance('tial', 'tail'), 1, 'a swap of neighbours is one typo');
  assert.equal(suggest('sesions', ['serve', 'sessions']), 'sessions');
  assert.equal(suggest('sess', ['serve', 'sessions']), 'sessions', 'a unique prefix');
  assert.equal(suggest('xyz', ['serve', 'sessions']), undefined);
});

test('call METHOD - reads the params object from stdin', { timeout: TIMEOUT }, async (t) => {
  const srv = await startServer(t);
  const client = await srv.client();
  await client.sessionAdd({ session: { name: 'from-stdin' } });
  const c = runCli(t, ['call', 'session/find', '-', '--socket', srv.socket]);
  c.child.stdin?.end('{"name":"from-stdin"}');
  assert.deepEqual(await c.exited, { code: 0, signal: null }, c.stderr());
  assert.equal((JSON.parse(c.stdout()) as { session: { name: string } }).session.name, 'from-stdin');
});

test('call METHOD - with stdin that is not JSON exits 2', { timeout: TIMEOUT }, async (t) => {
  const c = runCli(t, ['call', 'state/get', '-', '--socket', path.join(tempDir(), 'none.sock')]);
  c.child.stdin?.end('{nope');
  assert.deepEqual(await c.exited, { code: 2, signal: null });
  assert.match(c.stderr(), /PARAMS-JSON is not JSON/);
});

test('SIGHUP stops serve in order: exit 0 and its socket removed', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const server = await serveSocket(t, statePathIn(dir), socket);
  server.child.kill('SIGHUP');
  // Exit 0 with no signal: the handler ran (SIGHUP's default action would report signal SIGHUP).
  assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr());
  assert.equal(existsSync(socket), false, `the socket is removed; stderr:\n${server.stderr()}`);
});
