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
import { callCommand } from '../../src/commands/call-command.js';
import { commandHelp } from '../../src/commands/help.js';
import { serveCommand } from '../../src/commands/serve-command.js';
import { sessionsCommand } from '../../src/commands/sessions-command.js';
import { socketCommand } from '../../src/commands/socket-command.js';
import { statusCommand } from '../../src/commands/status-command.js';
import { editDistance, suggest } from '../../src/commands/suggest.js';
import { tailCommand } from '../../src/commands/tail-command.js';

const TIMEOUT = 30_000;
/** The commands' definitions, in the order the CLI lists them. */
const DEFINITIONS = [serveCommand, callCommand, tailCommand, sessionsCommand, statusCommand, socketCommand];
const COMMANDS = DEFINITIONS.map((c) => c.name);

test('--help lists every command with its summary and the exit codes, and exits 0', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd(['--help']);
  assert.equal(got.code, 0, got.stderr);
  assert.deepEqual(COMMANDS, ['serve', 'call', 'tail', 'sessions', 'status', 'socket']);
  const width = Math.max(...COMMANDS.map((c) => c.length));
  for (const c of DEFINITIONS) assert.ok(got.stdout.includes(`\n  ${c.name.padEnd(width)}  ${c.summary}\n`), c.name);
  assert.match(got.stdout, /^Usage:$/m);
  assert.match(got.stdout, /herrscher-state serve \[--state FILE\] \[--stdio\] \[--socket PATH\]/);
  assert.match(got.stdout, /herrscher-state call METHOD \[PARAMS-JSON\]/);
  assert.match(got.stdout, /^Exit codes:$/m);
  assert.match(got.stdout, /HERRSCHER_STATE_SOCKET/);
  assert.equal(got.stderr, '');
});

// Every command's help is rendered by one function from its definition (commandHelp), which the
// CLI prints for `COMMAND --help` and `help COMMAND`: each definition's page is checked here in
// process, and two spawned commands show the CLI prints exactly that page, one per route.
for (const cmd of DEFINITIONS) {
  test(`${cmd.name} --help prints its usage, flags and examples`, () => {
    const page = commandHelp(cmd);
    assert.match(page, new RegExp(`^  herrscher-state ${cmd.name}\\b`, 'm'));
    assert.match(page, /^Flags:$/m);
    assert.match(page, /^Examples:\n  herrscher-state /m);
    assert.match(page, /-h, --help/);
  });
}

test('serve --help prints its page and documents every serve flag', { timeout: TIMEOUT }, async () => {
  // This process's environment: the page names the default socket, which the definition reads from it.
  const got = await runToEnd(['serve', '--help'], { env: process.env });
  assert.deepEqual({ code: got.code, stdout: got.stdout, stderr: got.stderr }, { code: 0, stdout: commandHelp(serveCommand), stderr: '' });
  for (const flag of ['--state FILE', '--stdio', '--socket PATH', '--durability', '--max-message-bytes', '--log-level', '--log-file', '--announce']) {
    assert.ok(got.stdout.includes(flag), flag);
  }
});

test('help COMMAND prints the same as COMMAND --help', { timeout: TIMEOUT }, async () => {
  const viaHelp = await runToEnd(['help', 'tail'], { env: process.env });
  assert.deepEqual({ code: viaHelp.code, stdout: viaHelp.stdout, stderr: viaHelp.stderr }, { code: 0, stdout: commandHelp(tailCommand), stderr: '' });
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

test('a reader that closes the output before it is written (| head -0) ends the command quietly, exit 0, not with an EPIPE stack', { timeout: TIMEOUT }, async (t) => {
  const c = runCli(t, ['--help'], { collectStdout: false });
  c.child.stdout?.destroy();
  c.child.stdin?.end();
  const exit = await c.exited;
  assert.equal(c.stderr(), '');
  assert.deepEqual(exit, { code: 0, signal: null });
});

test('PARAMS-JSON that is JSON but no object (a bare string or number) exits 2 saying so, before any server is asked', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd(['call', 'session/find', '"main"', '--socket', path.join(tempDir(), 'none.sock')]);
  assert.equal(got.code, 2);
  assert.match(got.stderr, /^herrscher-state call: PARAMS-JSON must be a JSON object, .*got a string\n$/);
});
