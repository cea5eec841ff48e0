// `serve --shared` as a process: 200 state files in one server with bounded memory, 4 client
// processes on the same 50 states served by that one process with nothing left behind in the
// socket folder or the state folders, and two racing starts on one socket (one serves, the other
// exits with 4 at once, leaving the winner's socket alone).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { EXIT } from '../../src/commands/command.js';
import { socketLockPath } from '../../src/server/socket-lock.js';
import { tryFlock } from '../../src/store/lock.js';
import { SHARED_SOCKET_NAME } from '../../src/transport/socket.js';
import type { Child, Ctx } from '../helpers/cli.js';
import { runCli, waitForSocket } from '../helpers/cli.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { connectRaw } from '../helpers/wire.js';

const TIMEOUT = { timeout: 180_000 };
/** The shared server's lifetime lock beside its socket (src/server/socket-lock.ts). */
const LOCK_NAME = path.basename(socketLockPath(SHARED_SOCKET_NAME));
const STATES = 200;
/**
 * The states the 4 client processes share: each state is opened by four processes at once, which
 * 50 show as well as 200 (the 200 states' scale, memory and connections are the first test's).
 */
const SHARED_STATES = 50;
/** A generous bound on the server's resident memory with STATES states open (the issue's: 150 MB). */
const MAX_RSS_MB = 150;

/** `serve --shared` with a private XDG_RUNTIME_DIR: its socket is the per-user shared socket there. */
function startShared(t: Ctx, runtime: string, args: string[] = []): Child {
  return runCli(t, ['serve', '--shared', ...args], { env: { ...process.env, HERRSCHER_STATE_DIR: undefined, HERRSCHER_STATE_SOCKET: undefined, XDG_RUNTIME_DIR: runtime } });
}

/** `count` fresh state dirs (0700) under one temp folder. */
function stateFiles(count: number): string[] {
  const root = tempDir('hs-shared-states-');
  return Array.from({ length: count }, (_, i) => {
    const dir = path.join(root, `s${i}`);
    mkdirSync(dir, { mode: 0o700 });
    return statePathIn(dir);
  });
}

/** Resident set size of `pid` in MB (ps: Linux and macOS alike). */
function rssMb(pid: number): number {
  return Number(execFileSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' }).trim()) / 1024;
}

test(`${STATES} state files in one shared server, two connections each: one process, each state its own, memory bounded`, TIMEOUT, async (t) => {
  const runtime = tempDir('hs-shared-run-');
  const server = startShared(t, runtime, ['--durability', 'write']);
  const socket = path.join(runtime, 'herrscher-state', SHARED_SOCKET_NAME);
  await waitForSocket(socket, server);
  const states = stateFiles(STATES);
  const clients = [];
  // Every state in use at once: one connection each, kept open.
  for (const [i, state] of states.entries()) {
    const c = await connectRaw(socket, 'ndjson', t);
    await c.call('initialize', { state });
    await c.call('session/add', { session: { name: `n${i}`, channelID: 'c1', type: 'text', cmd: 'claude' } });
    await c.call('transcript/append', { name: `n${i}`, entry: { ts: '2026-01-01T00:00:00Z', role: 'user', text: `hello ${i}` } });
    // A second program on the same state: 400 connections at once, past a dedicated server's 256.
    const reader = await connectRaw(socket, 'ndjson', t);
    await reader.call('initialize', { state });
    clients.push(c, reader);
  }
  const statuses = (await Promise.all(clients.map((c) => c.call('status', {})))) as { pid: number; statePath: string; connections: number }[];
  assert.deepEqual(new Set(statuses.map((s) => s.pid)), new Set([server.pid]), 'one server process serves them all');
  assert.deepEqual(statuses.map((s) => s.statePath), states.flatMap((s) => [s, s]), 'each connection is answered by its own state');
  assert.ok(statuses.every((s) => s.connections === 2));
  const rss = rssMb(server.pid);
  assert.ok(rss < MAX_RSS_MB, `resident memory with ${STATES} states open: ${rss.toFixed(1)} MB, bound ${MAX_RSS_MB} MB`);
  assert.deepEqual(readdirSync(path.dirname(socket)).sort(), [LOCK_NAME, SHARED_SOCKET_NAME], 'the socket folder holds the socket and its lock alone');
  for (const state of states) assert.equal(existsSync(path.join(path.dirname(state), '.herrscher-state', 'state.json.serving.json')), false, 'no server record');
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
  assert.deepEqual(readdirSync(path.dirname(socket)), [LOCK_NAME], 'the stop removed the socket (the lock file stays, unlocked)');
});

/** A client process: for each state, connect, initialize it, append once, close; prints the pids that answered. */
const CLIENT = `
import net from 'node:net';
const [socket, who, ...states] = process.argv.slice(1);
const pids = new Set();
function session(state) {
  return new Promise((resolve, reject) => {
    const s = net.createConnection(socket);
    let buf = '';
    const replies = [];
    s.on('data', (d) => {
      buf += d;
      for (let i; (i = buf.indexOf('\\n')) >= 0; buf = buf.slice(i + 1)) replies.push(JSON.parse(buf.slice(0, i)));
      if (replies.length === 3) s.end();
    });
    s.on('error', reject);
    s.on('close', () => resolve(replies));
    const msgs = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { state } },
      { jsonrpc: '2.0', id: 2, method: 'transcript/append', params: { name: 'shared', requireSession: false, entry: { ts: '2026-01-01T00:00:00Z', role: 'user', text: who } } },
      { jsonrpc: '2.0', id: 3, method: 'status', params: {} },
    ];
    s.write(msgs.map((m) => JSON.stringify(m)).join('\\n') + '\\n');
  });
}
for (const state of states) {
  const replies = await session(state);
  const bad = replies.filter((r) => r.error);
  if (replies.length !== 3 || bad.length) throw new Error(state + ': ' + JSON.stringify(replies));
  pids.add(replies.find((r) => r.id === 3).result.pid);
}
process.stdout.write(JSON.stringify([...pids]));
`;

test(`4 client processes on the same ${SHARED_STATES} states: one server process, every append kept, nothing left behind`, TIMEOUT, async (t) => {
  const runtime = tempDir('hs-shared-run-');
  const server = startShared(t, runtime, ['--durability', 'write']);
  const socket = path.join(runtime, 'herrscher-state', SHARED_SOCKET_NAME);
  await waitForSocket(socket, server);
  const states = stateFiles(SHARED_STATES);
  const run = (who: string) =>
    new Promise<number[]>((resolve, reject) => {
      const c = spawn(process.execPath, ['--input-type=module', '-e', CLIENT, socket, who, ...states], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      c.stdout.on('data', (d: Buffer) => (out += d.toString()));
      c.stderr.on('data', (d: Buffer) => (err += d.toString()));
      t.after(() => c.kill('SIGKILL'));
      c.once('close', (code) => (code === 0 ? resolve(JSON.parse(out) as number[]) : reject(new Error(`client ${who} exited ${code}: ${err}`))));
    });
  const pids = await Promise.all(['w', 'x', 'y', 'z'].map(run));
  assert.deepEqual(pids, [[server.pid], [server.pid], [server.pid], [server.pid]], 'every call of every process answered by the one server');
  // Each state holds the four appends, one per process.
  for (const state of [states[0], states[SHARED_STATES - 1]]) {
    const c = await connectRaw(socket, 'ndjson', t);
    await c.call('initialize', { state });
    const read = (await c.call('transcript/read', { name: 'shared' })) as { entries: { text: string }[] };
    assert.deepEqual(read.entries.map((e) => e.text).sort(), ['w', 'x', 'y', 'z']);
    c.end();
  }
  assert.deepEqual(readdirSync(path.dirname(socket)).sort(), [LOCK_NAME, SHARED_SOCKET_NAME], 'the socket folder holds the socket and its lock alone: no log, no per-state socket');
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
});

test('two racing serve --shared on one socket: one serves, the other exits 4 at once and leaves its socket alone', TIMEOUT, async (t) => {
  const runtime = tempDir('hs-shared-run-');
  const [a, b] = [startShared(t, runtime), startShared(t, runtime)];
  const socket = path.join(runtime, 'herrscher-state', SHARED_SOCKET_NAME);
  const first = await Promise.race([a.exited.then(() => a), b.exited.then(() => b)]);
  const winner = first === a ? b : a;
  assert.deepEqual(await first.exited, { code: EXIT.inUse, signal: null }, `the loser's stderr: ${first.stderr()}`);
  assert.match(first.stderr(), /another shared server serves .* already/);
  await waitForSocket(socket, winner);
  const c = await connectRaw(socket, 'ndjson', t);
  await c.call('initialize', { state: statePathIn(tempDir('hs-shared-race-')) });
  const status = (await c.call('status', {})) as { pid: number };
  assert.equal(status.pid, winner.pid, 'the socket is the winner\'s');
  c.end();
  winner.child.kill('SIGTERM');
  assert.deepEqual(await winner.exited, { code: 0, signal: null });
});

test('serve --shared --exit-when-idle stops with 0 once its last connection is gone, a refused one included, and removes its socket', TIMEOUT, async (t) => {
  const runtime = tempDir('hs-shared-run-');
  // Long enough that no start under load is taken for idleness before the test's first connection.
  const server = startShared(t, runtime, ['--exit-when-idle', '3000']);
  const socket = path.join(runtime, 'herrscher-state', SHARED_SOCKET_NAME);
  await waitForSocket(socket, server);
  const refused = await connectRaw(socket, 'ndjson', t);
  assert.equal((await refused.request('initialize', { state: '' })).error?.code, -32602);
  const c = await connectRaw(socket, 'ndjson', t);
  await c.call('initialize', { state: statePathIn(tempDir('hs-shared-idle-')) });
  c.end();
  assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr());
  assert.deepEqual(readdirSync(path.dirname(socket)), [LOCK_NAME]);
});

test('serve --shared exits 4 at once while another holds its socket\'s lock, and never touches the socket path', TIMEOUT, async (t) => {
  const runtime = tempDir('hs-shared-run-');
  const folder = path.join(runtime, 'herrscher-state');
  mkdirSync(folder, { mode: 0o700 });
  const socket = path.join(folder, SHARED_SOCKET_NAME);
  // Another server mid-start (or mid-stop): the lock held, no socket yet.
  const fd = openSync(socketLockPath(socket), 'a+', 0o600);
  t.after(() => closeSync(fd));
  assert.equal(tryFlock(fd), true);
  const server = startShared(t, runtime);
  assert.deepEqual(await server.exited, { code: EXIT.inUse, signal: null }, server.stderr());
  assert.deepEqual(readdirSync(folder), [LOCK_NAME], 'no socket was made');
});

test('4 serve --shared started at once over a stale socket file: exactly one serves, the others exit 4', { timeout: 60_000 }, async (t) => {
  const runtime = tempDir('hs-shared-run-');
  const folder = path.join(runtime, 'herrscher-state');
  mkdirSync(folder, { mode: 0o700 });
  const socket = path.join(folder, SHARED_SOCKET_NAME);
  // A server killed with -9 leaves its socket file: nothing answers on it.
  const dead = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(socket)}, () => process.stdout.write('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => dead.stdout.once('data', () => resolve()));
  dead.kill('SIGKILL');
  await new Promise((resolve) => dead.once('exit', resolve));
  assert.ok(existsSync(socket), 'the stale socket file is there');
  const starts = [0, 1, 2, 3].map(() => startShared(t, runtime));
  await Promise.any(starts.map((s) => waitForSocket(socket, s)));
  const c = await connectRaw(socket, 'ndjson', t);
  await c.call('initialize', { state: statePathIn(tempDir('hs-shared-stale-')) });
  const { pid } = (await c.call('status', {})) as { pid: number };
  const winner = starts.find((s) => s.pid === pid);
  assert.ok(winner, 'the socket is one of the starts\'');
  // Every other start ends with 4 (one left running, unreachable, would never end: the test's timeout).
  for (const s of starts.filter((x) => x !== winner)) assert.deepEqual(await s.exited, { code: EXIT.inUse, signal: null }, s.stderr());
  c.end();
  winner.child.kill('SIGTERM');
  assert.deepEqual(await winner.exited, { code: 0, signal: null });
});
