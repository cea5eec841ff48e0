// status's counters move with real calls: calls and errors per method (unknown methods under one
// key), write latency over the latest writes, the store's fsyncs and compactions, connections
// opened. And `status --timeout` bounds the whole check, as a supervisor's health check needs.
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { UNKNOWN_METHOD } from '../../src/server/call-metrics.js';
import { runToEnd } from '../helpers/cli.js';
import { entry, forceCompaction, TIMEOUT } from '../helpers/feed.js';
import { startServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-dir.js';

test('status counters: calls and errors per method, write latency, fsyncs and compactions move with the calls made', { timeout: TIMEOUT }, async (t) => {
  const server = await startServer(t);
  const client = await server.client();
  const before = (await client.status()).counters;
  assert.deepEqual(before.writeLatencyMs, { p50: null, p99: null, samples: 0 });
  assert.equal(before.compactions, 0);
  await client.sessionAdd({ session: { name: 'a' } });
  for (let i = 0; i < 3; i++) await client.transcriptAppend({ name: 'a', entry: entry(`e${i}`) });
  await assert.rejects(client.transcriptAppend({ name: 'ghost', entry: entry('x') }));
  const raw = await server.raw('ndjson');
  for (const method of ['no/such', 'another/one']) assert.equal((await raw.request(method, {})).error?.code, -32601);

  const after = (await client.status()).counters;
  assert.deepEqual(after.calls['transcript/append'], { calls: 4, errors: 1 });
  assert.deepEqual(after.calls['session/add'], { calls: 1, errors: 0 });
  assert.deepEqual(after.calls[UNKNOWN_METHOD], { calls: 2, errors: 2 }, 'unknown methods under one key, not one each');
  assert.equal(after.calls['no/such'], undefined);
  assert.equal(after.writeLatencyMs.samples, 5, 'session/add and the four appends');
  assert.ok(after.writeLatencyMs.p50 !== null && after.writeLatencyMs.p99 !== null && after.writeLatencyMs.p50 <= after.writeLatencyMs.p99);
  // durability sync: each acknowledged write was synced.
  assert.ok(after.fsyncs >= before.fsyncs + 4, `fsyncs ${before.fsyncs} → ${after.fsyncs}`);
  assert.ok(after.connectionsOpened >= 2);
  assert.equal(after.catchUps, 0);

  await forceCompaction(client, server.dir, 'a');
  assert.equal((await client.status()).counters.compactions, 1);
});

test('status --timeout bounds the whole check: a server that accepts and never answers is exit 1 within it', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 'mute.sock');
  const held: net.Socket[] = [];
  const mute = net.createServer((s) => void held.push(s)); // accepts, reads, never writes
  await new Promise<void>((resolve) => mute.listen(socket, resolve));
  t.after(() => {
    for (const s of held) s.destroy();
    mute.close();
  });
  // Without --timeout the reply would be waited for 30 s (HERRSCHER_STATE_REPLY_TIMEOUT_MS's default): the test would time out.
  const got = await runToEnd(['status', '--socket', socket, '--timeout', '300'], { env: { ...process.env, HERRSCHER_STATE_REPLY_TIMEOUT_MS: undefined } });
  assert.equal(got.code, 1, got.stderr);
  assert.equal(got.stdout, '');
  assert.match(got.stderr, /^herrscher-state status: no reply within 300 ms \(--timeout 300 bounds the whole request\)\n$/);
});

test('status of a healthy server with a short --timeout: exit 0, counters in --json', { timeout: TIMEOUT }, async (t) => {
  const server = await startServer(t);
  const client = await server.client();
  await client.sessionAdd({ session: { name: 'a' } });
  const got = await runToEnd(['status', '--json', '--socket', server.socket, '--timeout', '5000']);
  assert.equal(got.code, 0, got.stderr);
  const s = JSON.parse(got.stdout) as { healthy: boolean; counters: { calls: Record<string, { calls: number }> } };
  assert.equal(s.healthy, true);
  assert.equal(s.counters.calls['session/add']?.calls, 1);
});
