// Who may end the server: with a host on stdio, only the host; a bridge on the socket may not stop
// the server under it. Without a host, the operator on the socket may.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { runCli, waitForSocket } from '../helpers/cli.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { connectRaw, RawClient } from '../helpers/wire.js';

test('with a host on stdio, shutdown from a socket client is refused and exit is ignored', async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const server = runCli(t, ['serve', '--stdio', '--socket', socket, '--state', statePathIn(dir)], { collectStdout: false });
  const host = new RawClient(server.child.stdout as NodeJS.ReadableStream, server.child.stdin as NodeJS.WritableStream, 'ndjson');
  await waitForSocket(socket, server);
  const bridge = await connectRaw(socket, 'ndjson', t);
  const refused = await bridge.request('shutdown');
  assert.equal(refused.error?.code, ErrorCodes.InvalidRequest);
  assert.match(refused.error?.message ?? '', /belong to the host on stdio/);
  bridge.notify('exit');
  // Still serving both: a write from the bridge goes through, and the host still owns the end.
  const added = await bridge.request('session/add', { session: { name: 'a', type: 'text', cmd: 'c' } });
  assert.equal((added.result as { session: { name: string } }).session.name, 'a');
  assert.equal((await host.request('shutdown')).result, null);
  host.notify('exit');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
});

test('without a host, a socket client may shut the server down and make it exit 0', async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const server = runCli(t, ['serve', '--socket', socket, '--state', statePathIn(dir)]);
  await waitForSocket(socket, server);
  const operator = await connectRaw(socket, 'lsp', t);
  assert.equal((await operator.request('shutdown')).result, null);
  const refused = await operator.request('session/add', { session: { name: 'a', type: 'text', cmd: 'c' } });
  assert.equal(refused.error?.code, ErrorCodes.ShuttingDown);
  operator.notify('exit');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
});
