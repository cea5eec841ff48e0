// What one client may make the server hold, and what it gets past each bound (docs/limits.md):
// unsent replies, unsent notifications (encoded bytes, per connection), subscriptions per
// connection, and unfinished messages of all connections together.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_RUNNING_READS, MAX_UNSENT_REPLY_BYTES } from '../../src/server/read-gate.js';
import { MAX_PENDING_BYTES, MAX_SUBSCRIPTIONS_PER_CONNECTION } from '../../src/server/feed-limits.js';
import { FrameBudget } from '../../src/transport/frame-budget.js';
import type { Message } from '../helpers/wire.js';
import { kernelSlack, LIMIT, wireServer } from './wire-server.js';

const entry = (text: string) => ({ ts: '2024-01-01T00:00:00Z', role: 'user', text });
const turn = () => new Promise((resolve) => setImmediate(resolve));
/**
 * Reads of an 8 KiB entry pipelined by a client that never reads: their replies are ~4 times the
 * unsent-reply bound plus the socket buffers (~1.3 MB), so the bound is passed early and must
 * hold for the rest; every reply is still produced once the client reads, so N is the cost. Half
 * the reads of a 4 KiB entry, the same bytes: a gate planted at 1.25 times the bound still fails.
 */
const READS = 500;
const ENTRY_BYTES = 8192;

test(`subscriptions past ${MAX_SUBSCRIPTIONS_PER_CONNECTION} on one connection are refused with -32600; another connection is not affected`, LIMIT, async (t) => {
  const w = await wireServer(t);
  const c = await w.connect('ndjson');
  const ids: string[] = [];
  for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_CONNECTION; i++) ids.push(((await c.call('watch/subscribe', { transcripts: '*' })) as { subscription: string }).subscription);
  const refused = await c.request('watch/subscribe', { sessions: true });
  assert.equal(refused.error?.code, -32600);
  assert.match(refused.error?.message ?? '', new RegExp(`at most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions`));
  const other = await w.connect('ndjson');
  assert.ok(await other.call('watch/subscribe', { sessions: true }));
  await c.call('watch/unsubscribe', { subscription: ids[0] });
  assert.ok(await c.call('watch/subscribe', { sessions: true }), 'a freed slot can be used again');
  assert.equal(w.server.subscriptions.size, MAX_SUBSCRIPTIONS_PER_CONNECTION + 1);
});

// The server runs with the per-connection byte bound 8 times lower than the default (2 MiB): the
// 32 subscriptions pass it within the first two appends instead of after ~20 MB. Counting
// characters instead of bytes sends the first CJK append whole (3.1 MB: 1 Mi characters), past
// the bound plus what the socket can hold (kernelSlack, ~0.5 MB), so that still fails.
const PENDING_BYTES = MAX_PENDING_BYTES / 8;

test('a stalled connection with 32 subscriptions and CJK / control-character text: what it is sent stays within the byte bound; a reading subscriber gets everything', LIMIT, async (t) => {
  const w = await wireServer(t, { maxMessageBytes: 4 * 1024 * 1024 }, { pendingBytes: PENDING_BYTES });
  const writer = await w.connect('ndjson');
  await writer.call('session/add', { session: { name: 'a' } });
  const stalled = await w.connect('ndjson');
  let received = 0;
  stalled.socket.on('data', (chunk: Buffer) => (received += chunk.length));
  const subs = new Set<string>();
  for (let i = 0; i < 32; i++) subs.add(((await stalled.call('watch/subscribe', { transcripts: '*' })) as { subscription: string }).subscription);
  const reader = await w.connect('lsp');
  await reader.call('watch/subscribe', { transcripts: ['a'] });
  stalled.socket.pause();
  const receivedBefore = received;

  // 32 Ki characters each: CJK is 3 bytes a character in UTF-8, a control character 6 (\u0001).
  // Counted in characters (as before), 12 appends to 32 subscriptions stayed far below the bound.
  const texts = ['界'.repeat(32768), '\u0001'.repeat(32768)];
  const largest = 32768 * 6 + 512;
  const N = 12;
  for (let i = 0; i < N; i++) {
    assert.deepEqual(await writer.call('transcript/append', { name: 'a', entry: entry(texts[i % 2] as string) }), { seq: i });
    const conn = w.connections[1];
    assert.ok(conn && conn.unsentBytes() <= PENDING_BYTES + largest, `unsent to the stalled connection: ${conn?.unsentBytes()} bytes`);
  }
  // The reading subscriber got every entry, text intact.
  const last = await reader.waitFor((m) => m.method === 'transcript/didAppend' && (m.params as { seq: number }).seq === N - 1);
  assert.equal((last.params as { entry: { text: string } }).entry.text, texts[(N - 1) % 2]);
  assert.equal(reader.received.filter((m) => m.method === 'transcript/didAppend').length, N);

  // The stalled one reads again: every subscription overflowed, and what it was sent before is
  // within the bound (plus what the kernel's socket buffers held).
  stalled.socket.resume();
  await stalled.call('session/list', {});
  const overflowed = stalled.received.filter((m: Message) => m.method === 'watch/overflow').map((m) => (m.params as { subscription: string }).subscription);
  assert.deepEqual(new Set(overflowed), subs);
  const KERNEL_SLACK = kernelSlack();
  const sent = received - receivedBefore;
  assert.ok(sent <= PENDING_BYTES + largest + KERNEL_SLACK, `the stalled connection was sent ${sent} bytes of notifications`);
  assert.equal(w.server.subscriptions.size, 1);
});

test(`${READS} pipelined reads (4 MB of replies) from a client that never reads: at most ${MAX_UNSENT_REPLY_BYTES} bytes + ${2 * MAX_RUNNING_READS} replies unsent; all answered once it reads`, LIMIT, async (t) => {
  const w = await wireServer(t);
  const c = await w.connect('ndjson');
  await c.call('session/add', { session: { name: 'a' } });
  await c.call('transcript/append', { name: 'a', entry: entry('x'.repeat(ENTRY_BYTES)) });
  const reply = JSON.stringify(await c.call('transcript/read', { name: 'a' }));
  const replyBytes = reply.length + 64;
  c.socket.pause();
  const N = READS;
  assert.ok(N * replyBytes > 3 * MAX_UNSENT_REPLY_BYTES, 'the replies are well past the bound and what the socket buffers hold');
  const ids: number[] = [];
  let batch = '';
  for (let i = 0; i < N; i++) {
    const id = 1000 + i;
    ids.push(id);
    batch += `${JSON.stringify({ jsonrpc: '2.0', id, method: 'transcript/read', params: { name: 'a' } })}\n`;
  }
  c.writeBytes(batch);
  const conn = w.connections[0];
  assert.ok(conn);
  // Watch the server until it is held back, then 200 turns more: the bound must hold at every turn
  // of the event loop on the way. The replies are ~3 times what the bound and the socket hold, so
  // it gets there however slowly the machine runs (a count of turns did not: a loaded machine
  // spun 2 000 of them before the first reply); the test's timeout ends the wait otherwise.
  const bound = MAX_UNSENT_REPLY_BYTES + 2 * MAX_RUNNING_READS * replyBytes;
  let peak = 0;
  while (peak <= MAX_UNSENT_REPLY_BYTES && !t.signal.aborted) {
    await turn();
    peak = Math.max(peak, conn.unsentBytes());
  }
  for (let i = 0; i < 200; i++) {
    await turn();
    peak = Math.max(peak, conn.unsentBytes());
  }
  assert.ok(peak > MAX_UNSENT_REPLY_BYTES, `the server was held back: peak unsent ${peak} bytes`);
  assert.ok(peak <= bound, `peak unsent ${peak} bytes, bound ${bound}`);
  c.socket.resume();
  const replies = await Promise.all(ids.map((id) => c.response(id)));
  assert.ok(replies.every((r) => JSON.stringify(r.result) === reply));
});

test('unfinished messages of all connections share one budget: past it a connection gets -32040 and is closed, the others go on', LIMIT, async (t) => {
  const budget = new FrameBudget(1024 * 1024);
  const w = await wireServer(t, { maxMessageBytes: 1024 * 1024, frameBudget: budget });
  const a = await w.connect('lsp');
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'state/qualifiedName', params: { name: 'x'.repeat(700_000) } });
  const bytes = Buffer.from(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  a.writeBytes(bytes.subarray(0, 1000));
  while (budget.used === 0) await turn();

  const b = await w.connect('ndjson');
  b.writeBytes('{"jsonrpc":"2.0","id":1,"method":"session/list","params":{},"pad":"');
  b.writeBytes('y'.repeat(500_000));
  const refused = await b.waitFor((m) => m.error !== undefined);
  assert.equal(refused.error?.code, -32040);
  assert.match(refused.error?.message ?? '', /unfinished messages from all clients/);
  await b.ended;
  await w.closed(1);

  a.writeBytes(bytes.subarray(1000));
  const done = await a.response(1);
  assert.equal(done.error, undefined, JSON.stringify(done.error));
  assert.equal(budget.used, 0, 'a finished message gives its bytes back');

  const c = await w.connect('ndjson');
  c.writeBytes('{"jsonrpc":"2.0","id":1,');
  while (budget.used === 0) await turn();
  c.socket.destroy();
  await w.closed(2);
  assert.equal(budget.used, 0, 'a connection that closes mid-message gives its bytes back');
});
