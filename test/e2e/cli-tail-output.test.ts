// tail and sessions for people and scripts: a name with no session is exit 1 with a message;
// transcript text cannot drive the terminal (control characters, escape sequences and bidi
// overrides printed escaped unless --raw); --json for scripts; tail -f ends when the session is
// removed (exit 0), rides over a server restart (said on stderr), and with --no-reconnect ends
// when the server goes away (exit 1, said on stderr). The server runs in
// process; the CLI is spawned because its output and exit code are the subject.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Child } from '../helpers/cli.js';
import path from 'node:path';
import { runCli, runToEnd, serveSocket, waitForStderr } from '../helpers/cli.js';
import { entry, TIMEOUT, typedClient } from '../helpers/feed.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import type { Ctx } from '../helpers/server.js';
import { startServer } from '../helpers/server.js';
import { escapeForTerminal, safeJson } from '../../src/commands/escape.js';
import { connect } from '../../src/client/client.js';

/** Text a hostile channel member could send: colour, bell, carriage return, right-to-left override. */
const HOSTILE = 'red \x1b[31mALERT\x1b[0m bell\x07 cr\rover \u202Egnp.exe\nsecond\tline';
const ESCAPED = 'red \\x1b[31mALERT\\x1b[0m bell\\x07 cr\\x0dover \\u202egnp.exe';

async function withSession(t: Ctx, texts: string[]) {
  const srv = await startServer(t);
  const client = await srv.client();
  await client.sessionAdd({ session: { name: 'main', type: 'text', cmd: 'claude', vendor: 'v\x1b]0;x\x07' } });
  for (const text of texts) await client.transcriptAppend({ name: 'main', entry: entry(text) });
  return { srv, client };
}

function untilLines(c: Child, count: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = (): void => {
      if (c.stdout().split('\n').length > count) resolve();
    };
    c.child.stdout?.on('data', check);
    check();
    void c.exited.then(() => reject(new Error(`exited with stdout:\n${c.stdout()}\nstderr:\n${c.stderr()}`)));
  });
}

test('tail of a name with no session exits 1 saying so, with nothing on stdout', { timeout: TIMEOUT }, async (t) => {
  const { srv } = await withSession(t, []);
  const got = await runToEnd(['tail', 'nosuch', '--socket', srv.socket]);
  assert.deepEqual(
    { code: got.code, stdout: got.stdout, stderr: got.stderr },
    { code: 1, stdout: '', stderr: 'herrscher-state tail: no session named "nosuch" (herrscher-state sessions lists them)\n' },
  );
});

test('tail -f of a name with no session exits 1 too, instead of waiting forever', { timeout: TIMEOUT }, async (t) => {
  const { srv } = await withSession(t, []);
  const got = await runToEnd(['tail', 'nosuch', '-f', '--socket', srv.socket]);
  assert.equal(got.code, 1);
  assert.match(got.stderr, /no session named "nosuch"/);
});

test('tail prints ESC, BEL, CR and U+202E in transcript text escaped, keeping newlines and tabs', { timeout: TIMEOUT }, async (t) => {
  const { srv } = await withSession(t, [HOSTILE]);
  const got = await runToEnd(['tail', 'main', '--socket', srv.socket]);
  assert.equal(got.code, 0, got.stderr);
  assert.ok(got.stdout.includes(ESCAPED), `escaped text in:\n${got.stdout}`);
  assert.match(got.stdout, /\n +second\tline\n$/, 'the newline continues indented, the tab is kept');
  assert.ok(!/[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e\u2066-\u2069]/.test(got.stdout), 'no raw control or bidi character reaches stdout');
});

test('tail --raw prints the text as it is', { timeout: TIMEOUT }, async (t) => {
  const { srv } = await withSession(t, [HOSTILE]);
  const got = await runToEnd(['tail', 'main', '--raw', '--socket', srv.socket]);
  assert.equal(got.code, 0, got.stderr);
  assert.ok(got.stdout.includes('\x1b[31mALERT') && got.stdout.includes('\u202E') && got.stdout.includes('\r'), got.stdout);
});

test('tail --json prints one JSON object per entry with its seq, the text intact and no raw C1 or bidi character', { timeout: TIMEOUT }, async (t) => {
  const { srv } = await withSession(t, ['one', HOSTILE]);
  const got = await runToEnd(['tail', 'main', '--json', '--socket', srv.socket]);
  assert.equal(got.code, 0, got.stderr);
  const lines = got.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { seq: number; entry: { text: string } });
  assert.deepEqual(lines.map((l) => [l.seq, l.entry.text]), [[0, 'one'], [1, HOSTILE]]);
  assert.ok(!/[\x00-\x08\x0b-\x1f\u202a-\u202e]/.test(got.stdout.replace(/\n/g, '')), 'escaped inside the JSON');
});

test('sessions --json prints the session/infos result; the table escapes what the files hold', { timeout: TIMEOUT }, async (t) => {
  const { srv } = await withSession(t, ['one']);
  const json = await runToEnd(['sessions', '--json', '--socket', srv.socket]);
  assert.equal(json.code, 0, json.stderr);
  const parsed = JSON.parse(json.stdout) as { sessions: { session: { name: string; vendor: string }; usage: { entries: number } }[] };
  assert.deepEqual(parsed.sessions.map((s) => [s.session.name, s.session.vendor, s.usage.entries]), [['main', 'v\x1b]0;x\x07', 1]]);
  const table = await runToEnd(['sessions', '--socket', srv.socket]);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^main +v\\x1b\]0;x\\x07 /m);
});

test('tail -f ends with exit 0 when the session is removed, saying so on stderr', { timeout: TIMEOUT }, async (t) => {
  const { srv, client } = await withSession(t, ['one']);
  const tail = runCli(t, ['tail', 'main', '-f', '--socket', srv.socket]);
  await untilLines(tail, 1);
  await client.sessionRemove({ name: 'main', purge: true });
  assert.deepEqual(await tail.exited, { code: 0, signal: null }, tail.stderr());
  assert.equal(tail.stderr(), 'herrscher-state tail: session "main" was removed; nothing more to follow\n');
});

test('tail -f --no-reconnect exits 1 when the server goes away, saying it does not reconnect', { timeout: TIMEOUT }, async (t) => {
  // A server process that dies: the kernel closes its end, as no in-process stop does.
  const dir = tempDir();
  const server = await serveSocket(t, statePathIn(dir), path.join(dir, 's.sock'));
  const client = await typedClient(t, server.socket);
  await client.sessionAdd({ session: { name: 'main', type: 'text', cmd: 'claude' } });
  await client.transcriptAppend({ name: 'main', entry: entry('one') });
  const tail = runCli(t, ['tail', 'main', '-f', '--no-reconnect', '--socket', server.socket]);
  await untilLines(tail, 1);
  server.child.kill('SIGKILL');
  assert.deepEqual(await tail.exited, { code: 1, signal: null }, tail.stderr());
  await waitForStderr(tail, /^herrscher-state tail: the server went away \(the server closed the connection\); not reconnecting \(--no-reconnect\)\n$/);
});

test('tail -f rides over a server restart: says so on stderr, then prints what was appended meanwhile and after, each entry once', { timeout: TIMEOUT }, async (t) => {
  // The server's orderly stop and its restart on the same socket run in process (the Service
  // `serve` runs, stopped as SIGTERM stops it); tail, whose output is the subject, is spawned.
  let server = await startServer(t);
  const { dir, socket } = server;
  const writer = await connect({ socket, reconnect: { initialDelayMs: 20, maxDelayMs: 200 }, callTimeoutMs: 60_000 });
  t.after(() => writer.close());
  await writer.sessionAdd({ session: { name: 'main', type: 'text', cmd: 'claude' } });
  for (let i = 0; i < 3; i++) await writer.transcriptAppend({ name: 'main', entry: entry(`first${i}`) });
  const tail = runCli(t, ['tail', 'main', '-f', '--json', '-n', '2', '--socket', socket]);
  await untilLines(tail, 2);
  await server.close();
  await waitForStderr(tail, /the server went away .*; reconnecting…\n/);
  server = await startServer(t, { dir });
  // Appended before tail is back: it catches up on them from the file.
  for (let i = 0; i < 3; i++) await writer.transcriptAppend({ name: 'main', entry: entry(`second${i}`) });
  await waitForStderr(tail, /reconnected; following again/);
  for (let i = 0; i < 3; i++) await writer.transcriptAppend({ name: 'main', entry: entry(`third${i}`) });
  await untilLines(tail, 2 + 6);
  const lines = tail.stdout().trim().split('\n').map((l) => JSON.parse(l) as { seq: number; entry: { text: string } });
  assert.deepEqual(lines.map((l) => `${l.seq} ${l.entry.text}`), [
    '1 first1', '2 first2', '3 second0', '4 second1', '5 second2', '6 third0', '7 third1', '8 third2',
  ]);
  tail.child.kill('SIGTERM');
  assert.deepEqual(await tail.exited, { code: 0, signal: null }, tail.stderr());
});

test('escaping covers C0 but newline and tab, DEL, C1 and every bidi override and isolate', () => {
  assert.equal(escapeForTerminal('a\x00b\x7fc\u0085d\u009be\u202af\u2066g\u2069h\n\t'), 'a\\x00b\\x7fc\\u0085d\\u009be\\u202af\\u2066g\\u2069h\n\t');
  assert.equal(escapeForTerminal('plain ünïcödé 😀'), 'plain ünïcödé 😀');
  assert.equal(safeJson({ t: '\u009b\u202e\x1b' }), '{"t":"\\u009b\\u202e\\u001b"}');
  assert.deepEqual(JSON.parse(safeJson({ t: '\u009b\u202e' })), { t: '\u009b\u202e' });
});
