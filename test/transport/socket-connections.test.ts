// Several clients on one real unix socket: framing detected per connection, a bad client closed
// alone, and editor-style clients (vscode-jsonrpc's own stream reader/writer) served unchanged.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { createFramedTransport } from '../../src/transport/framing.js';
import { connectUnixSocket, listenUnixSocket } from '../../src/transport/socket.js';
import type { EchoServer } from './frames.js';
import { bounded, echoServer, FrameCollector, lsp, ndjson, request } from './frames.js';

const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function startServer(maxMessageBytes = 1024 * 1024) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-conn-'));
  const servers: EchoServer[] = [];
  const sockets: net.Socket[] = [];
  const listener = await listenUnixSocket(path.join(dir, 's.sock'), (socket) => {
    sockets.push(socket);
    servers.push(echoServer(socket, socket, { maxMessageBytes }));
  });
  cleanups.push(async () => {
    await listener.close();
    for (const s of servers) s.connection.dispose();
    for (const s of sockets) s.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { path: listener.path, servers };
}

async function rawClient(at: string, framing: 'lsp' | 'ndjson') {
  const socket = await connectUnixSocket(at, { timeoutMs: 5000 });
  cleanups.push(() => void socket.destroy());
  return { socket, replies: new FrameCollector(socket, framing) };
}

async function vscodeClient(at: string) {
  const socket = await connectUnixSocket(at, { timeoutMs: 5000 });
  const connection = createMessageConnection(new StreamMessageReader(socket), new StreamMessageWriter(socket));
  connection.listen();
  cleanups.push(() => {
    connection.dispose();
    socket.destroy();
  });
  return connection;
}

test("a client on vscode-jsonrpc's own stream reader and writer is served over the socket", bounded, async () => {
  const server = await startServer();
  const client = await vscodeClient(server.path);
  assert.deepEqual(await client.sendRequest('echo', { from: 'editor', text: 'é😀' }), { from: 'editor', text: 'é😀' });
  assert.deepEqual(await client.sendRequest('echo', { again: true }), { again: true });
  assert.equal(server.servers[0]?.transport.framing(), 'lsp');
});

test('a client on this transport speaking NDJSON is served, and answered in NDJSON', bounded, async () => {
  const server = await startServer();
  const socket = await connectUnixSocket(server.path, { timeoutMs: 5000 });
  const t = createFramedTransport(socket, socket, { maxMessageBytes: 1024 * 1024, initialFraming: 'ndjson' });
  const client = createMessageConnection(t.reader, t.writer);
  client.listen();
  cleanups.push(() => {
    client.dispose();
    socket.destroy();
  });
  assert.deepEqual(await client.sendRequest('echo', { from: 'bridge' }), { from: 'bridge' });
  assert.equal(t.framing(), 'ndjson');
  assert.equal(server.servers[0]?.transport.framing(), 'ndjson');
});

test('two connections on one listener each keep the framing they opened with', bounded, async () => {
  const server = await startServer();
  const a = await rawClient(server.path, 'ndjson');
  const b = await rawClient(server.path, 'lsp');
  a.socket.write(ndjson(request(1, ['a1'])));
  b.socket.write(lsp(request(1, ['b1'])));
  a.socket.write(ndjson(request(2, ['a2'])));
  b.socket.write(lsp(request(2, ['b2'])));
  const fromA = await a.replies.take(2);
  const fromB = await b.replies.take(2);
  assert.deepEqual(fromA.map((r) => r.result), ['a1', 'a2']);
  assert.deepEqual(fromB.map((r) => r.result), ['b1', 'b2']);
  assert.match(a.replies.raw, /^\{/);
  assert.match(b.replies.raw, /^Content-Length: /);
  assert.deepEqual(server.servers.map((s) => s.transport.framing()).sort(), ['lsp', 'ndjson']);
});

test('an unparsable line on a socket is answered with -32700 and that connection goes on', bounded, async () => {
  const server = await startServer();
  const c = await rawClient(server.path, 'ndjson');
  c.socket.write(ndjson('{oops', request(2)));
  const got = await c.replies.take(2);
  assert.equal(got.find((r) => r.id === null)?.error?.code, ErrorCodes.ParseError);
  assert.equal(got.find((r) => r.id === 2)?.result !== undefined, true);
});

const fatal: [string, 'lsp' | 'ndjson', string, RegExp][] = [
  ['an oversized NDJSON line', 'ndjson', `{"jsonrpc":"2.0","id":1,"method":"echo","params":"${'x'.repeat(5000)}`, /a line must be at most 1024 bytes/],
  ['an oversized Content-Length', 'lsp', 'Content-Length: 999999999\r\n\r\n{"jsonrpc"', /Content-Length must be at most 1024\. Got 999999999/],
  ['a garbled Content-Length', 'lsp', 'Content-Length: 12abc\r\n\r\n{}', /Content-Length value must be a non-negative integer\. Got "12abc"/],
];

for (const [what, framing, bytes, message] of fatal) {
  test(`${what} gets -32040 and closes that connection only; another on the listener is unaffected`, bounded, async () => {
    const server = await startServer(1024);
    const good = await vscodeClient(server.path);
    assert.deepEqual(await good.sendRequest('echo', { before: true }), { before: true });

    const bad = await rawClient(server.path, framing);
    bad.socket.write(bytes);
    const [reply] = await bad.replies.take(1);
    assert.equal(reply?.id, null);
    assert.equal(reply?.error?.code, ErrorCodes.MessageTooLarge);
    assert.match(reply?.error?.message ?? '', message);
    await bad.replies.ended;

    assert.deepEqual(await good.sendRequest('echo', { after: true }), { after: true });
    const [goodServer, badServer] = server.servers;
    assert.deepEqual(goodServer?.protocolErrors, []);
    assert.deepEqual(badServer?.protocolErrors.map((e) => e.code), [ErrorCodes.MessageTooLarge]);
    await badServer?.closed;
  });
}
