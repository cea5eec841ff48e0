// Start work that follows a host's first reply (serve's heap settings): it runs once the
// connection has written its first answer, once only, and runs anyway when no answer comes.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'node:test';
import pino from 'pino';
import { afterFirstReply } from '../../src/commands/after-first-reply.js';
import { Service } from '../../src/server/service.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { RawClient } from '../helpers/wire.js';

const TIMEOUT = { timeout: 30_000 };
const LONG_MS = 60_000;
const unexpected = (err: unknown): void => assert.fail(`onError: ${String(err)}`);

/** A connection whose first answer comes when the test says. */
function fakeConnection(): { firstAnswer: Promise<void>; answer: () => void } {
  let answer!: () => void;
  const firstAnswer = new Promise<void>((resolve) => (answer = resolve));
  return { firstAnswer, answer };
}

test('the work waits for the first answer, then runs once', TIMEOUT, async () => {
  const conn = fakeConnection();
  let runs = 0;
  afterFirstReply(conn, LONG_MS, () => void runs++, unexpected);
  for (let i = 0; i < 3; i++) await nextTurn();
  assert.equal(runs, 0, 'not before the first answer');
  conn.answer();
  await conn.firstAnswer;
  await nextTurn();
  assert.equal(runs, 1);
  conn.answer();
  await nextTurn();
  assert.equal(runs, 1, 'once');
});

test('with no answer, the work runs after latestMs; with no connection, on the next turn', TIMEOUT, async (t) => {
  const ran: string[] = [];
  // The fallback timer does not keep a process alive (serve's stdin or socket does): this test's does.
  const alive = setInterval(() => undefined, 1000);
  t.after(() => clearInterval(alive));
  await new Promise<void>((resolve) => afterFirstReply(fakeConnection(), 5, () => (ran.push('unanswered'), resolve()), unexpected));
  await new Promise<void>((resolve) => afterFirstReply(undefined, LONG_MS, () => (ran.push('no connection'), resolve()), unexpected));
  assert.deepEqual(ran, ['unanswered', 'no connection']);
});

test("a failure of the work goes to onError, not to the process's unhandled rejections", TIMEOUT, async () => {
  const conn = fakeConnection();
  const failed = new Promise<unknown>((resolve) => afterFirstReply(conn, LONG_MS, () => Promise.reject(new Error('boom')), resolve));
  conn.answer();
  assert.equal(((await failed) as Error).message, 'boom');
});

test("a connection's firstAnswer settles once its first reply is written, not before", TIMEOUT, async (t) => {
  const log = pino({ level: 'silent' });
  const service = await Service.open({ state: statePathIn(tempDir()), log, version: 'test', framing: { maxMessageBytes: 1 << 20 }, lifecycleOwner: 'stdio' });
  t.after(() => service.stop(0, 'test ended'));
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  const conn = service.attachStreams(toServer, fromServer, 'stdio');
  let settled = false;
  void conn.firstAnswer.then(() => (settled = true));
  for (let i = 0; i < 3; i++) await nextTurn();
  assert.equal(settled, false, 'no request, no answer');
  const host = new RawClient(fromServer, toServer, 'ndjson');
  const id = host.send('initialize', {});
  await conn.firstAnswer;
  assert.ok(fromServer.readableLength > 0 || host.received.some((m) => 'id' in m && m.id === id), 'the reply is out when it settles');
  assert.equal((await host.response(id)).error, undefined);
});
