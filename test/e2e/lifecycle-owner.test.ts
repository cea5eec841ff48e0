// Who may end the server: with a host on stdio, only the host; a bridge on the socket may not stop
// the server under it (the spawned `serve --stdio --socket` of lifecycle.test.ts checks that).
// Without a host, the operator on the socket may: here against the Service `serve --socket` runs,
// in process, whose `exited` is the code `serve` exits with (cli-operator.test.ts's spawned
// socket-only server shows `serve` itself lets a socket client's shutdown end it).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { errorsIn, startServer } from '../helpers/server.js';

test('without a host, a socket client may shut the server down and make it exit 0', async (t) => {
  const server = await startServer(t);
  const operator = await server.raw('lsp');
  assert.equal((await operator.request('shutdown')).result, null);
  const refused = await operator.request('session/add', { session: { name: 'a', type: 'text', cmd: 'c' } });
  assert.equal(refused.error?.code, ErrorCodes.ShuttingDown);
  operator.notify('exit');
  assert.equal(await server.exited, 0, JSON.stringify(errorsIn(server.logs)));
});
