// Every error class of the protocol, answered on the wire (never only logged), over a socket
// with raw bytes in both framings (in-process server) and over stdio (the built CLI, and the
// in-process server's stdio-like connection): parse errors, invalid requests, unknown
// methods, invalid params, the application codes, and oversized or garbled frames, which close
// that one connection while other clients carry on. No error reply leaks a path or a stack.
import assert from 'node:assert/strict';
import { mkdirSync, existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { serveStdio } from '../helpers/cli.js';
import type { Ctx, InProcessServer } from '../helpers/server.js';
import { startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import type { Framing, Message, RawClient } from '../helpers/wire.js';

const FRAMINGS: Framing[] = ['lsp', 'ndjson'];
const OTHER_INC = 'inc_AAAAAAAAAAAAAAAAAAAAAAAAAA';
/** A safety net only: a hung reply fails the test instead of the run. Generous: on a 2-core machine under load 20, correct tests took over 30 s. */
const TIMEOUT = 120_000;

/** Asserts the reply carries neither the state dir's absolute path nor a stack line. */
function assertNoLeak(reply: Message, dir: string): void {
  const text = JSON.stringify(reply);
  for (const p of new Set([dir, realpathSync(dir)])) assert.ok(!text.includes(p), `reply leaks the state dir: ${text}`);
  assert.ok(!/ {4}at /.test(text), `reply carries a stack: ${text}`);
}

/** Asserts `reply` is a JSON-RPC error with `code` (and `id` when given), leaking nothing. */
function assertError(reply: Message, code: number, dir: string, id?: string | number | null): NonNullable<Message['error']> {
  assert.equal(reply.jsonrpc, '2.0', `jsonrpc of ${JSON.stringify(reply)}`);
  assert.ok(reply.error, `expected error ${code}, got ${JSON.stringify(reply)}`);
  assert.equal(reply.error.code, code, `code of ${JSON.stringify(reply)}`);
  assert.equal(typeof reply.error.message, 'string');
  assert.ok(reply.error.message.length > 0, 'the error has a message');
  assert.equal('result' in reply, false, 'an error reply has no result');
  if (id !== undefined) assert.equal(reply.id, id, `id of ${JSON.stringify(reply)}`);
  assertNoLeak(reply, dir);
  return reply.error;
}

/** Asserts -32602 whose data.issues is exactly one issue at `issuePath` with a message matching `message`. */
function assertInvalidParams(reply: Message, dir: string, id: number, issuePath: (string | number)[], message: RegExp): void {
  const error = assertError(reply, -32602, dir, id);
  const data = error.data as { issues?: { path: unknown; message: unknown }[] } | undefined;
  assert.ok(data && Array.isArray(data.issues), `data.issues of ${JSON.stringify(error)}`);
  assert.equal(data.issues.length, 1, `one issue in ${JSON.stringify(data.issues)}`);
  const [issue] = data.issues;
  assert.deepEqual(issue?.path, issuePath, `issue path in ${JSON.stringify(data.issues)}`);
  assert.equal(typeof issue?.message, 'string');
  assert.match(issue?.message as string, message);
}

/** A request whose answer proves the connection still works. */
async function assertAlive(rpc: RawClient, what: string): Promise<void> {
  const reply = await rpc.request('state/qualifiedName', { name: 'still-here' });
  assert.deepEqual(reply.result, { qualifiedName: 'still-here' }, `${what}: the next request is answered`);
}

const body = (method: string, id: number, params: string): string => `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${params}}`;

/** An in-process server; `server.connect(framing)` is a raw client on a fresh socket connection. */
async function socketServer(t: Ctx, maxMessageBytes?: number): Promise<{ dir: string; server: InProcessServer & { connect: InProcessServer['raw'] } }> {
  const srv = await startServer(t, { maxMessageBytes });
  return { dir: srv.dir, server: Object.assign(srv, { connect: srv.raw }) };
}

describe('errors over a socket, raw bytes', () => {
  for (const framing of FRAMINGS) {
    test(`unparsable JSON (${framing}) is answered -32700 with id null and the connection goes on`, { timeout: TIMEOUT }, async (t) => {
      const { dir, server } = await socketServer(t);
      const rpc = await server.connect(framing);
      await assertAlive(rpc, 'before');
      rpc.sendBody('{"jsonrpc":"2.0","id":41,"method":"state/get",');
      assertError(await rpc.waitFor((m) => m.id === null), -32700, dir, null);
      rpc.sendBody('{nope}');
      assertError(await rpc.waitFor((m) => m.id === null), -32700, dir, null);
      // Invalid UTF-8 inside a string: refused rather than stored as U+FFFD.
      rpc.sendBody(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":42,"method":"state/qualifiedName","params":{"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}')]));
      assertError(await rpc.waitFor((m) => m.id === null || m.id === 42), -32700, dir, null);
      await assertAlive(rpc, 'after the parse errors');
    });

    test(`[1], 5, a batch and {"jsonrpc":"2.0"} (${framing}) are each answered -32600`, { timeout: TIMEOUT }, async (t) => {
      const { dir, server } = await socketServer(t);
      const rpc = await server.connect(framing);
      await assertAlive(rpc, 'before');
      for (const bad of ['[1]', '5', '[{"jsonrpc":"2.0","id":7,"method":"state/get"}]', '{"jsonrpc":"2.0"}']) {
        rpc.sendBody(bad);
        const reply = await rpc.waitFor((m) => m.id === null || m.id === 7);
        assertError(reply, -32600, dir, null);
        await assertAlive(rpc, `after ${bad}`);
      }
      assert.equal(rpc.received.filter((m) => m.id === 7).length, 0, 'the batch was not executed');
    });
  }

  test('an unknown method is answered -32601 with the request id, a string id included', { timeout: TIMEOUT }, async (t) => {
    const { dir, server } = await socketServer(t);
    const rpc = await server.connect('ndjson');
    rpc.sendBody(body('session/explode', 3, '{}'));
    const error = assertError(await rpc.response(3), -32601, dir, 3);
    assert.match(error.message, /session\/explode/);
    rpc.sendBody('{"jsonrpc":"2.0","id":"req-7","method":"session/explode"}');
    assertError(await rpc.response('req-7'), -32601, dir, 'req-7');
    await assertAlive(rpc, 'after -32601');
  });

  test('a notification gets no reply, not even for an unknown method or bad params', { timeout: TIMEOUT }, async (t) => {
    const { server } = await socketServer(t);
    const rpc = await server.connect('lsp');
    rpc.notify('session/explode', {});
    rpc.notify('transcript/read', { name: 5 });
    await assertAlive(rpc, 'after the notifications');
    assert.deepEqual(rpc.received.map((m) => m.id), [1], 'the only message received is the reply to the request');
  });

  test('session/add without a name is answered -32602 with the issue at session.name', { timeout: TIMEOUT }, async (t) => {
    const { dir, server } = await socketServer(t);
    const rpc = await server.connect('ndjson');
    rpc.sendBody(body('session/add', 4, '{"session":{"cmd":"claude"}}'));
    assertInvalidParams(await rpc.response(4), dir, 4, ['session', 'name'], /./);
    assert.deepEqual(await rpc.call('session/list'), { sessions: [] }, 'nothing was added');
  });

  test('a cost of 1e400 (Infinity once parsed) is answered -32602 and nothing is appended', { timeout: TIMEOUT }, async (t) => {
    const { dir, server } = await socketServer(t);
    const rpc = await server.connect('ndjson');
    await rpc.call('session/add', { session: { name: 'a' } });
    rpc.sendBody(body('transcript/append', 5, '{"name":"a","entry":{"ts":"2026-01-01T00:00:00Z","role":"user","text":"x","cost":1e400}}'));
    assertInvalidParams(await rpc.response(5), dir, 5, ['entry', 'cost'], /Infinity|finite/);
    assert.deepEqual(await rpc.call('transcript/read', { name: 'a' }), { entries: [], firstSeq: 0 });
    assert.equal(existsSync(path.join(dir, 'transcripts/a.jsonl')), false, 'no transcript file');
  });

  test('a token_cap of 1.5 is answered -32602 with the issue at token_cap', { timeout: TIMEOUT }, async (t) => {
    const { dir, server } = await socketServer(t);
    const rpc = await server.connect('lsp');
    await rpc.call('session/add', { session: { name: 'a' } });
    rpc.sendBody(body('session/setBudget', 6, '{"name":"a","cost_cap":1,"token_cap":1.5,"cohort_cost_cap":0,"cohort_token_cap":0,"paused_reason":""}'));
    assertInvalidParams(await rpc.response(6), dir, 6, ['token_cap'], /integer/);
    const found = (await rpc.call('session/find', { name: 'a' })) as { session: Record<string, unknown> };
    assert.equal(found.session.cost_cap, undefined, 'no cap was set');
  });

  test('transcript/read of the name ../x is answered -32602 naming the bad name', { timeout: TIMEOUT }, async (t) => {
    const { dir, server } = await socketServer(t);
    const rpc = await server.connect('ndjson');
    rpc.sendBody(body('transcript/read', 7, '{"name":"../x"}'));
    assertInvalidParams(await rpc.response(7), dir, 7, ['name'], /\.\.\/x/);
  });

  test('session/add of a taken name is answered -32010', { timeout: TIMEOUT }, async (t) => {
    const { dir, server } = await socketServer(t);
    const rpc = await server.connect('ndjson');
    await rpc.call('session/add', { session: { name: 'dup', cmd: 'first' } });
    const error = assertError(await rpc.request('session/add', { session: { name: 'dup', cmd: 'second' } }), -32010, dir);
    assert.match(error.message, /dup/);
    const list = (await rpc.call('session/list')) as { sessions: { cmd: string }[] };
    assert.deepEqual(list.sessions.map((s) => s.cmd), ['first']);
  });

  test('an append for a name without a session row is answered -32011 and writes no file', { timeout: TIMEOUT }, async (t) => {
    const { dir, server } = await socketServer(t);
    const rpc = await server.connect('ndjson');
    const entry = { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' };
    assertError(await rpc.request('transcript/append', { name: 'ghost', entry }), -32011, dir);
    assertError(await rpc.request('participants/append', { name: 'ghost', userId: 'u1' }), -32011, dir);
    assert.equal(existsSync(path.join(dir, 'transcripts/ghost.jsonl')), false);
    assert.equal(existsSync(path.join(dir, 'participants/ghost.log')), false);
  });

  test('a stale incarnation guard is answered -32050 with the current incarnation in data', { timeout: TIMEOUT }, async (t) => {
    const { dir, server } = await socketServer(t);
    const rpc = await server.connect('lsp');
    const { session } = (await rpc.call('session/add', { session: { name: 'a' } })) as { session: { incarnation: string } };
    const entry = { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' };
    const e1 = assertError(await rpc.request('transcript/append', { name: 'a', entry, incarnation: OTHER_INC }), -32050, dir);
    assert.deepEqual(e1.data, { incarnation: session.incarnation });
    const e2 = assertError(await rpc.request('session/setResumeToken', { name: 'a', resumeToken: 't', incarnation: OTHER_INC }), -32050, dir);
    assert.deepEqual(e2.data, { incarnation: session.incarnation });
    assert.deepEqual(await rpc.call('transcript/append', { name: 'a', entry, incarnation: session.incarnation }), { seq: 0 }, 'the right guard passes');
  });

  test('a mutation after shutdown is answered -32030 on every connection, reads still work', { timeout: TIMEOUT }, async (t) => {
    const { dir, server } = await socketServer(t);
    const rpc = await server.connect('ndjson');
    const other = await server.connect('lsp');
    await rpc.call('session/add', { session: { name: 'a' } });
    assert.equal(await rpc.call('shutdown'), null);
    assertError(await rpc.request('session/add', { session: { name: 'b' } }), -32030, dir);
    assertError(await other.request('state/setWorkspace', { workspace: '/w' }), -32030, dir);
    const list = (await other.call('session/list')) as { sessions: { name: string }[] };
    assert.deepEqual(list.sessions.map((s) => s.name), ['a']);
  });

  test('a transcript path that is a directory fails the append with -32020 and data.code EISDIR', { timeout: TIMEOUT }, async (t) => {
    const { dir, server } = await socketServer(t);
    const rpc = await server.connect('ndjson');
    await rpc.call('session/add', { session: { name: 'a' } });
    mkdirSync(path.join(dir, 'transcripts/a.jsonl'), { recursive: true });
    const entry = { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' };
    const error = assertError(await rpc.request('transcript/append', { name: 'a', entry }), -32020, dir);
    assert.deepEqual(error.data, { code: 'EISDIR' });
    assert.match(error.message, /transcripts\/a\.jsonl/, 'the message names the file relative to the state dir');
    await assertAlive(rpc, 'after -32020');
  });

  const LIMIT = 4096;
  const tooLarge: { name: string; framing: Framing; bytes: () => Buffer }[] = [
    {
      name: 'an NDJSON line over --max-message-bytes',
      framing: 'ndjson',
      bytes: () => Buffer.from(`${body('state/qualifiedName', 9, `{"name":"${'x'.repeat(LIMIT)}"}`)}\n`),
    },
    {
      name: 'an LSP Content-Length over --max-message-bytes',
      framing: 'lsp',
      bytes: () => {
        const b = body('state/qualifiedName', 9, `{"name":"${'x'.repeat(LIMIT)}"}`);
        return Buffer.from(`Content-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`);
      },
    },
    {
      name: 'a garbled Content-Length',
      framing: 'lsp',
      bytes: () => Buffer.from(`Content-Length: 12abc\r\n\r\n${body('state/get', 9, '{}')}`),
    },
    {
      name: 'an LSP header block that never ends',
      framing: 'lsp',
      bytes: () => Buffer.from(`Content-Length: 10\r\nX-Padding: ${'y'.repeat(64 * 1024)}`),
    },
    {
      name: 'a negative Content-Length',
      framing: 'lsp',
      bytes: () => Buffer.from(`Content-Length: -5\r\n\r\n${body('state/get', 9, '{}')}`),
    },
  ];
  for (const c of tooLarge) {
    test(`${c.name} is answered -32040, that connection alone is closed`, { timeout: TIMEOUT }, async (t) => {
      const { dir, server } = await socketServer(t, LIMIT);
      const bystander = await server.connect(c.framing === 'lsp' ? 'ndjson' : 'lsp');
      await assertAlive(bystander, 'the bystander before');
      const rpc = await server.connect(c.framing);
      await assertAlive(rpc, 'the offender before');
      rpc.writeBytes(c.bytes());
      const reply = await rpc.waitFor((m) => 'error' in m);
      assertError(reply, -32040, dir);
      await rpc.ended; // the server hung up on this connection
      assert.equal(rpc.received.filter((m) => m.id === 9).length, 0, 'the oversized request was not executed');
      await assertAlive(bystander, 'the bystander after');
      await assertAlive(await server.connect(c.framing), 'a new connection after');
    });
  }
});

describe('errors over stdio', () => {
  // The built CLI for one framing (the process boundary: stdout holds only frames, exit 0), the
  // in-process server's stdio connection for the other.
  for (const framing of FRAMINGS) {
    const spawned = framing === 'lsp';
    test(`every error class over stdio (${framing}${spawned ? ', spawned' : ', in process'}) is answered and the server goes on`, { timeout: TIMEOUT }, async (t) => {
      const dir = tempDir();
      let exited: () => Promise<void>;
      let rpc: RawClient;
      if (spawned) {
        const server = serveStdio(t, statePathIn(dir), framing);
        rpc = server.rpc;
        exited = async () => assert.deepEqual(await server.exited, { code: 0, signal: null }, `stderr:\n${server.stderr()}`);
      } else {
        const srv = await startServer(t, { dir, lifecycleOwner: 'stdio' });
        rpc = srv.stdio(framing);
        exited = async () => assert.equal(await srv.exited, 0);
      }
      const entry = { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' };

      rpc.sendBody('{"jsonrpc":"2.0","id":1,"method":');
      assertError(await rpc.waitFor((m) => m.id === null), -32700, dir, null);
      await assertAlive(rpc, 'after -32700');

      for (const bad of ['[1]', '5', '[{"jsonrpc":"2.0","id":70,"method":"state/get"}]', '{"jsonrpc":"2.0"}']) {
        rpc.sendBody(bad);
        assertError(await rpc.waitFor((m) => m.id === null || m.id === 70), -32600, dir, null);
        await assertAlive(rpc, `after ${bad}`);
      }

      rpc.sendBody(body('no/such', 100, '{}'));
      assertError(await rpc.response(100), -32601, dir, 100);

      rpc.sendBody(body('session/add', 101, '{"session":{"cmd":"claude"}}'));
      assertInvalidParams(await rpc.response(101), dir, 101, ['session', 'name'], /./);
      const { session } = (await rpc.call('session/add', { session: { name: 'a' } })) as { session: { incarnation: string } };
      rpc.sendBody(body('transcript/append', 102, '{"name":"a","entry":{"ts":"t","role":"user","text":"x","cost":1e400}}'));
      assertInvalidParams(await rpc.response(102), dir, 102, ['entry', 'cost'], /Infinity|finite/);
      rpc.sendBody(body('session/setBudget', 103, '{"name":"a","cost_cap":0,"token_cap":1.5,"cohort_cost_cap":0,"cohort_token_cap":0,"paused_reason":""}'));
      assertInvalidParams(await rpc.response(103), dir, 103, ['token_cap'], /integer/);
      rpc.sendBody(body('transcript/read', 104, '{"name":"../x"}'));
      assertInvalidParams(await rpc.response(104), dir, 104, ['name'], /\.\.\/x/);

      assertError(await rpc.request('session/add', { session: { name: 'a' } }), -32010, dir);
      assertError(await rpc.request('transcript/append', { name: 'ghost', entry }), -32011, dir);
      const conflict = assertError(await rpc.request('participants/append', { name: 'a', userId: 'u', incarnation: OTHER_INC }), -32050, dir);
      assert.deepEqual(conflict.data, { incarnation: session.incarnation });

      mkdirSync(path.join(dir, 'transcripts/a.jsonl'), { recursive: true });
      const io = assertError(await rpc.request('transcript/append', { name: 'a', entry }), -32020, dir);
      assert.deepEqual(io.data, { code: 'EISDIR' });

      assert.equal(await rpc.call('shutdown'), null);
      assertError(await rpc.request('participants/append', { name: 'a', userId: 'u' }), -32030, dir);
      assert.deepEqual(await rpc.call('participants/read', { name: 'a' }), { userIds: [] }, 'reads work after shutdown');

      rpc.notify('exit');
      await exited();
      assert.deepEqual(rpc.garbage, [], 'stdout held only frames');
    });
  }
});
