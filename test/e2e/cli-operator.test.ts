// What an operator meets at a shell: `tail -n 0` and `-n -1`, `call --timeout` on a server that
// never answers, `call shutdown` on a socket-only server and `status` while it stops, a regular
// file given as --socket.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { runCli, runToEnd, serveSocket } from '../helpers/cli.js';
import { entry, TIMEOUT } from '../helpers/feed.js';
import { closeClean, errorsIn, startServer } from '../helpers/server.js';
import { connectRaw } from '../helpers/wire.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

test('tail NAME -n 0 prints nothing; with -f it then prints only what is appended', { timeout: TIMEOUT }, async (t) => {
  const server = await startServer(t);
  const client = await server.client();
  await client.sessionAdd({ session: { name: 'main' } });
  await client.transcriptAppend({ name: 'main', entry: entry('old one') });
  await client.transcriptAppend({ name: 'main', entry: entry('old two') });

  const once = await runToEnd(['tail', 'main', '-n', '0', '--socket', server.socket]);
  assert.deepEqual({ code: once.code, stdout: once.stdout, stderr: once.stderr }, { code: 0, stdout: '', stderr: '' });

  const follow = runCli(t, ['tail', 'main', '-n', '0', '-f', '--json', '--socket', server.socket]);
  // Subscribed once the server counts its subscription; then an append must be its first line.
  for (let i = 0; i < 400 && (await client.status()).subscriptions === 0; i++) await new Promise((r) => setTimeout(r, 25));
  await client.transcriptAppend({ name: 'main', entry: entry('new') });
  await new Promise<void>((resolve) => {
    const check = (): void => void (follow.stdout().includes('\n') && resolve());
    follow.child.stdout?.on('data', check);
    check();
  });
  follow.child.kill('SIGTERM');
  await follow.exited;
  const lines = follow.stdout().trim().split('\n').map((l) => JSON.parse(l) as { seq: number; entry: { text: string } });
  assert.deepEqual(lines.map((l) => l.entry.text), ['new'], `stdout:\n${follow.stdout()}`);
  await closeClean(server);
});

test('tail -n -1 is refused as a bad count, not "needs a value"', { timeout: TIMEOUT }, async () => {
  const got = await runToEnd(['tail', 'main', '-n', '-1', '--socket', path.join(tempDir(), 'none.sock')]);
  assert.equal(got.code, 2, got.stderr);
  assert.match(got.stderr, /--lines must be a whole number, got "-1"/);
  assert.doesNotMatch(got.stderr, /needs a value/);
});

test('call --timeout bounds the whole request: a server that accepts and never answers ends the call with exit 1', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 'mute.sock');
  const held: net.Socket[] = [];
  const mute = net.createServer((s) => void held.push(s)); // accepts, reads, never writes
  await new Promise<void>((resolve) => mute.listen(socket, resolve));
  t.after(() => {
    for (const s of held) s.destroy();
    mute.close();
  });
  const got = await runToEnd(['call', 'state/get', '--socket', socket, '--timeout', '300']);
  assert.equal(got.code, 1, got.stderr);
  assert.equal(got.stdout, '');
  assert.match(got.stderr, /^herrscher-state call: no reply within 300 ms \(--timeout 300 bounds the whole request\)\n$/);
});

// The socket-only server here is the Service `serve` runs, in process (no lifecycle owner, as
// `serve --socket`); its `exited` is the code `serve` would exit with (`call shutdown` sends exit
// after shutdown). The commands, whose output is the subject, are spawned.
test('call shutdown stops a socket-only server; status said it was stopping in between', { timeout: TIMEOUT }, async (t) => {
  const server = await startServer(t);
  const { socket } = server;

  // A raw client sends shutdown alone (no exit): the server refuses writes, and says so in status.
  const raw = await connectRaw(socket, 'ndjson', t);
  await raw.request('shutdown', {});
  const status = await runToEnd(['status', '--json', '--socket', socket]);
  assert.equal(status.code, 1, 'a stopping server is not healthy');
  assert.deepEqual(((s) => ({ stopping: s.stopping, healthy: s.healthy }))(JSON.parse(status.stdout) as { stopping: boolean; healthy: boolean }), {
    stopping: true,
    healthy: false,
  });
  const human = await runToEnd(['status', '--socket', socket]);
  assert.match(human.stdout, /^health: +STOPPING \(shutdown received: writes refused\)$/m);

  const got = await runToEnd(['call', 'shutdown', '--socket', socket]);
  assert.deepEqual({ code: got.code, stdout: got.stdout.trim() }, { code: 0, stdout: 'null' }, got.stderr);
  assert.equal(await server.exited, 0, JSON.stringify(errorsIn(server.logs)));
});

test('a socket-only server also stops when the client that sent shutdown leaves without exit', { timeout: TIMEOUT }, async (t) => {
  // Spawned: serve itself turns this on for a server without stdio.
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const server = await serveSocket(t, statePathIn(dir), socket, ['--log-level', 'warn']);
  const raw = await connectRaw(socket, 'ndjson', t);
  await raw.request('shutdown', {});
  raw.socket.end();
  assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr());
});

test('a regular file given as --socket is named as such, not as an impersonation', { timeout: TIMEOUT }, async () => {
  const dir = path.join(tempDir(), 'private');
  mkdirSync(dir, { mode: 0o700 });
  const file = path.join(dir, 'state.json');
  writeFileSync(file, '{}');
  const got = await runToEnd(['call', 'state/get', '--socket', file]);
  assert.equal(got.code, 1);
  assert.match(got.stderr, /is a regular file, not a server's socket: no server listens there/);
  assert.doesNotMatch(got.stderr, /impersonat/);
});
