// The typed client (src/client) against the built server, as an editor extension uses it: one
// async function per method, errors as rejections, and a server that dies never leaves a call
// hanging or throwing synchronously.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { ResponseError } from 'vscode-jsonrpc';
import { connect } from '../../src/client/client.js';
import { spawn } from '../../src/client/spawn.js';
import { CLI, serveSocket } from '../helpers/cli.js';
import type { Ctx } from '../helpers/cli.js';
import { closeClean, startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

/** A safety net only: a hung call fails the test instead of the run. Generous: on a 2-core machine under load 20, correct tests took over 30 s. */
const TIMEOUT = 120_000;

function spawnTyped(t: Ctx, state: string) {
  const client = spawn({ state, cli: CLI, args: ['--log-level', 'warn'] });
  t.after(() => {
    if (client.child.exitCode === null && client.child.signalCode === null) client.child.kill('SIGKILL');
  });
  return client;
}

test('a failing call rejects with a ResponseError carrying the code and data', { timeout: TIMEOUT }, async (t) => {
  // The errors are the client's subject, not the server's process: the in-process Service.
  const server = await startServer(t);
  const client = await server.client();
  const { session } = await client.sessionAdd({ session: { name: 'a' } });
  await assert.rejects(client.sessionAdd({ session: { name: 'a' } }), (err: unknown) => {
    assert.ok(err instanceof ResponseError);
    assert.equal(err.code, -32010);
    return true;
  });
  await assert.rejects(client.sessionSetArchived({ name: 'a', archived: true, incarnation: 'inc_AAAAAAAAAAAAAAAAAAAAAAAAAA' }), (err: unknown) => {
    assert.ok(err instanceof ResponseError);
    assert.equal(err.code, -32050);
    assert.deepEqual(err.data, { incarnation: session.incarnation });
    return true;
  });
  await closeClean(server);
});

test('a call pending on a socket when the server dies rejects instead of hanging', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const server = await serveSocket(t, statePathIn(dir), socket);
  const client = await connect({ socket, framing: 'ndjson' });
  t.after(() => client.close());
  assert.deepEqual(await client.stateQualifiedName({ name: 'x' }), { qualifiedName: 'x' });
  server.child.kill('SIGSTOP'); // the request below cannot be answered…
  const pending = client.stateGet();
  server.child.kill('SIGKILL'); // …and then the server is gone
  await assert.rejects(pending);
  assert.equal((await server.exited).signal, 'SIGKILL');
});

test('a call after the spawned server exited returns a rejected promise, it does not throw', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const client = spawnTyped(t, statePathIn(dir));
  assert.deepEqual(await client.stateQualifiedName({ name: 'x' }), { qualifiedName: 'x' });
  await client.close();
  assert.equal(await client.exited, 0);
  let result: Promise<unknown> | undefined;
  assert.doesNotThrow(() => {
    result = client.stateGet();
  }, 'an async method reports failure through its promise');
  if (result) await assert.rejects(result);
});
