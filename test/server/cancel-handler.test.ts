// Cancellation of reads (src/server/cancel-handler.ts) called directly: -32800 with its message,
// a wait already cancelled refused before the waited promise is looked at, a failure of the wait
// passed on as an Error, and a read cancelled before it reaches the handler never run.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CancellationToken, CancellationTokenSource, ResponseError } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { cancelHandler, cancellable, cancelled } from '../../src/server/cancel-handler.js';
import type { Call } from '../../src/server/handler.js';

const cancelledToken = (): CancellationToken => {
  const source = new CancellationTokenSource();
  source.cancel();
  return source.token;
};

test('cancelled(): -32800, saying the request was cancelled before it was answered', () => {
  const err = cancelled();
  assert.ok(err instanceof ResponseError);
  assert.equal(err.code, ErrorCodes.RequestCancelled);
  assert.equal(err.message, 'request cancelled by $/cancelRequest before it was answered');
});

test('cancellable: a token already cancelled is -32800 even when the wait is already over', async () => {
  await assert.rejects(cancellable(Promise.resolve(), cancelledToken()), (e) => e instanceof ResponseError && e.code === ErrorCodes.RequestCancelled);
  await cancellable(Promise.resolve(), CancellationToken.None);
});

test('cancellable: a wait that fails is passed on, a thrown non-Error as an Error', async () => {
  const boom = new Error('boom');
  await assert.rejects(cancellable(Promise.reject(boom), CancellationToken.None), (e) => e === boom);
  await assert.rejects(cancellable(Promise.reject('plain'), CancellationToken.None), (e) => e instanceof Error && e.message === 'plain');
});

test('cancelHandler: a read cancelled before it reaches the handler is never run', async () => {
  let ran = 0;
  const h = cancelHandler(async () => {
    ran++;
    return 'read';
  });
  const read: Call = { method: 'session/list', params: {}, token: cancelledToken(), write: false };
  await assert.rejects(h(read), (e) => e instanceof ResponseError && e.code === ErrorCodes.RequestCancelled);
  assert.equal(ran, 0);
  assert.equal(await h({ ...read, method: 'session/add', write: true }), 'read', 'a write is run whatever its token says');
  assert.equal(ran, 1);
});
