// The wire attacks of docs/limits.md at full size, against the built CLI, with its RSS read from /proc:
// slow (hundreds of MB moved), so run by `npm run test:hostile`, not `npm test`. The fast suite
// holds the same bounds in process (wire-bounds.test.ts); these show the process survives them.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../src/transport/limits.js';
import { serveSocket, serveStdio } from '../helpers/cli.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { openSocket } from '../helpers/wire.js';

const MB = 1024 * 1024;
const SLOW = { timeout: 240_000 };
const entry = (text: string) => ({ ts: '2024-01-01T00:00:00Z', role: 'user', text });

/** VmHWM (peak RSS) of a process, in bytes. */
function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]) * 1024;
}

test('$/cancelRequest without params, with {} and with {"id":null} on stdio: the server goes on', SLOW, async (t) => {
  const dir = tempDir('hs-wire-');
  const server = serveStdio(t, statePathIn(dir), 'lsp');
  for (const params of [undefined, {}, { id: null }]) server.rpc.notify('$/cancelRequest', params);
  assert.deepEqual(await server.rpc.call('session/list', {}), { sessions: [] });
});

test('3 000 pipelined transcript/read of a 1 MB transcript from a client that never reads: peak RSS stays under 400 MB, others are answered', SLOW, async (t) => {
  const dir = tempDir('hs-wire-');
  const server = await serveSocket(t, statePathIn(dir), path.join(dir, 's.sock'), ['--log-level', 'warn']);
  const setup = await server.connect('ndjson');
  await setup.call('session/add', { session: { name: 'a' } });
  for (let i = 0; i < 16; i++) await setup.call('transcript/append', { name: 'a', entry: entry('x'.repeat(64 * 1024)) });

  const hog = await server.connect('ndjson');
  hog.socket.pause();
  let batch = '';
  for (let i = 0; i < 3000; i++) batch += `${JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'transcript/read', params: { name: 'a' } })}\n`;
  hog.writeBytes(batch);
  // Others are served meanwhile: 50 round trips from another client, each with a full read.
  for (let i = 0; i < 50; i++) assert.equal(((await setup.call('transcript/read', { name: 'a' })) as { entries: unknown[] }).entries.length, 16);
  const peak = peakRss(server.pid);
  t.diagnostic(`server peak RSS ${Math.round(peak / MB)} MB`);
  assert.ok(peak < 400 * MB, `server peak RSS ${Math.round(peak / MB)} MB`);
  hog.socket.destroy();
  assert.ok(await setup.call('session/list', {}));
});

async function partialFrames(socketPath: string, connections: number, framing: 'lsp' | 'ndjson'): Promise<{ refused: number }> {
  const size = 60 * MB;
  const chunk = Buffer.alloc(MB, 0x78);
  let refused = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const socket = await openSocket(socketPath);
      let closed = false;
      let answer = '';
      socket.on('data', (d: Buffer) => (answer += d.toString()));
      socket.on('error', () => (closed = true));
      socket.on('close', () => (closed = true));
      socket.write(framing === 'lsp' ? `Content-Length: ${size}\r\n\r\n` : '{"jsonrpc":"2.0","id":1,"method":"session/list","params":{},"pad":"');
      // Everything but the last byte, at the pace the server reads, until it hangs up.
      for (let sent = 0; sent < size - MB && !closed; sent += MB) {
        if (!socket.write(chunk)) await new Promise<void>((resolve) => { socket.once('drain', resolve); socket.once('close', resolve); });
      }
      if (answer.includes('-32040')) refused++;
      socket.destroy();
    }),
  );
  return { refused };
}

for (const [framing, connections] of [['lsp', 60], ['ndjson', 20]] as const) {
  test(`${connections} connections each sending a 60 MB message but its last byte (${framing}): refused past the 256 MiB budget, peak RSS under 900 MB`, SLOW, async (t) => {
    const dir = tempDir('hs-wire-');
    const server = await serveSocket(t, statePathIn(dir), path.join(dir, 's.sock'), ['--log-level', 'warn']);
    const { refused } = await partialFrames(server.socket, connections, framing);
    assert.ok(refused > 0, 'some connections were refused with -32040');
    const peak = peakRss(server.pid);
    t.diagnostic(`server peak RSS ${Math.round(peak / MB)} MB; ${refused} of ${connections} connections refused`);
    assert.ok(peak < 900 * MB, `server peak RSS ${Math.round(peak / MB)} MB`);
    const c = await server.connect('ndjson');
    assert.deepEqual(await c.call('session/list', {}), { sessions: [] });
  });
}

/**
 * One request of `size` bytes that is almost all one string the server does not know: an
 * unknown key of session/list's params, or the method name. The error reply used to quote it
 * in full (twice for a key: message and data).
 */
function hugeRequest(framing: 'lsp' | 'ndjson', size: number, huge: 'key' | 'method'): Buffer {
  const [head, tail] =
    huge === 'key' ? ['{"jsonrpc":"2.0","id":1,"method":"session/list","params":{"', '":1}}'] : ['{"jsonrpc":"2.0","id":1,"method":"', '","params":{}}'];
  const header = framing === 'lsp' ? `Content-Length: ${size - 64}\r\n\r\n` : '';
  const body = Buffer.alloc(size - 64, 0x6b); // 'k'
  body.write(head, 0);
  body.write(tail, body.length - tail.length);
  return Buffer.concat([Buffer.from(header), body, Buffer.from(framing === 'ndjson' ? '\n' : '')]);
}

/** Writes `message` whole on a fresh connection that never reads; resolves once it is written or the server hung up. */
async function sendNeverRead(socketPath: string, message: Buffer, open: net.Socket[]): Promise<'written' | 'closed'> {
  const socket = await openSocket(socketPath);
  open.push(socket);
  socket.pause();
  return new Promise((resolve) => {
    socket.on('error', () => resolve('closed'));
    socket.on('close', () => resolve('closed'));
    socket.write(message, (err) => resolve(err ? 'closed' : 'written'));
  });
}

for (const framing of ['lsp', 'ndjson'] as const) {
  test(`256 connections each sending a ${DEFAULT_MAX_MESSAGE_BYTES / MB} MiB message (an unknown key of that size, ${framing}) at once and never reading: peak RSS under 1 GiB, others answered`, SLOW, async (t) => {
    const dir = tempDir('hs-wire-');
    const server = await serveSocket(t, statePathIn(dir), path.join(dir, 's.sock'), ['--log-level', 'warn']);
    // The largest message the server accepts: a body (an LSP body, an NDJSON line) of exactly the limit.
    const message = hugeRequest(framing, DEFAULT_MAX_MESSAGE_BYTES + 64, 'key');
    const open: net.Socket[] = [];
    t.after(() => open.forEach((s) => s.destroy()));
    const outcomes = await Promise.all(Array.from({ length: 256 }, () => sendNeverRead(server.socket, message, open)));
    const c = await server.connect('ndjson');
    assert.deepEqual(await c.call('session/list', {}), { sessions: [] });
    const peak = peakRss(server.pid);
    t.diagnostic(`server peak RSS ${Math.round(peak / MB)} MB; ${outcomes.filter((o) => o === 'written').length} of 256 messages written whole, the rest refused`);
    assert.ok(peak < 1024 * MB, `server peak RSS ${Math.round(peak / MB)} MB`);
  });
}

for (const [framing, huge] of [['lsp', 'key'], ['ndjson', 'method']] as const) {
  test(`16 connections one after another, each a 60 MB request that is one unknown ${huge} (${framing}), never reading: each is read whole, peak RSS under 1 GiB`, SLOW, async (t) => {
    const dir = tempDir('hs-wire-');
    const server = await serveSocket(t, statePathIn(dir), path.join(dir, 's.sock'), ['--log-level', 'warn']);
    const message = hugeRequest(framing, 60 * MB, huge);
    const open: net.Socket[] = [];
    t.after(() => open.forEach((s) => s.destroy()));
    for (let i = 0; i < 16; i++) assert.equal(await sendNeverRead(server.socket, message, open), 'written', `message ${i} written whole`);
    const c = await server.connect('ndjson');
    assert.deepEqual(await c.call('session/list', {}), { sessions: [] });
    const peak = peakRss(server.pid);
    t.diagnostic(`server peak RSS ${Math.round(peak / MB)} MB`);
    assert.ok(peak < 1024 * MB, `server peak RSS ${Math.round(peak / MB)} MB`);
  });
}

test('8 connections × 64 subscriptions with since on a 4 MB transcript, never reading: peak RSS under 1 GiB; SIGTERM then stops in order, exit 0', SLOW, async (t) => {
  const dir = tempDir('hs-wire-');
  // The transcript as a file before the server starts: 4 000 entries of ~1 KB, just under the compaction trigger.
  mkdirSync(path.join(dir, 'transcripts'), { recursive: true });
  const line = (i: number) => `${JSON.stringify(entry(`${i}:${'x'.repeat(960)}`))}\n`;
  writeFileSync(path.join(dir, 'transcripts', 'a.jsonl'), Array.from({ length: 4000 }, (_, i) => line(i)).join(''));
  const server = await serveSocket(t, statePathIn(dir), path.join(dir, 's.sock'), ['--log-level', 'debug', '--log-format', 'json']);
  const open: net.Socket[] = [];
  t.after(() => open.forEach((s) => s.destroy()));
  const subscribe = (id: number) => `${JSON.stringify({ jsonrpc: '2.0', id, method: 'watch/subscribe', params: { transcripts: ['a'], since: { transcripts: { a: -1 } } } })}\n`;
  // Each connection reads until its 64 subscriptions are answered (a paused one is not read
  // past its first few requests: its output backs up), then stops reading for good.
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      const socket = await openSocket(server.socket);
      open.push(socket);
      await new Promise<void>((resolve) => {
        let buf = '';
        let replies = 0;
        socket.on('data', (chunk: Buffer) => {
          buf += chunk.toString('utf8');
          const lines = buf.split('\n');
          buf = lines.pop() as string;
          for (const l of lines) if (l.startsWith('{"jsonrpc":"2.0","id":')) assert.ok(l.includes('"result"') && ++replies <= 64, l);
          if (replies === 64) {
            socket.pause();
            resolve();
          }
        });
        socket.write(Array.from({ length: 64 }, (_, i) => subscribe(i + 1)).join(''));
      });
    }),
  );
  const watcher = await server.connect('ndjson');
  assert.equal(((await watcher.call('status', {})) as { subscriptions: number }).subscriptions, 8 * 64);
  const peak = peakRss(server.pid);
  t.diagnostic(`server peak RSS ${Math.round(peak / MB)} MB with 512 catch-ups stalled`);
  assert.ok(peak < 1024 * MB, `server peak RSS ${Math.round(peak / MB)} MB`);
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
  const steps = server
    .stderr()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg?: string; step?: string; level: number })
    .map((r) => (r.msg === 'stopping' || r.msg === 'stopped' ? r.msg : r.step))
    .filter((s) => s !== undefined);
  assert.deepEqual(steps, ['stopping', 'closed', 'feed closed', 'answered', 'finished', 'stopped']);
});
