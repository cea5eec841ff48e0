// SharedHub (src/server/shared-hub.ts) over stub transports: how a connection's first request
// chooses its state (initialize's `state`, else the default), what is refused before any state
// opens (a `state` that is not a non-empty string, too many messages before the first request),
// and the answer of a state that cannot be opened (the store's error; a locked state's holder pid
// and socket). States that cannot be opened stand for the default so that no test opens a store
// it does not mean to.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { pino } from 'pino';
import type { Message } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../../src/protocol/errors.js';
import { MAX_HELD_MESSAGES, SharedHub } from '../../src/server/shared-hub.js';
import { Store } from '../../src/store/store.js';
import { writeServerRecord } from '../../src/transport/server-record.js';
import { notification, request, stubTransport, type Written } from '../helpers/stub-transport.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'shared-hub-unit-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
/** A folder where the state file belongs: it cannot be opened (EISDIR), and its error names it. */
const unopenable = (name: string): string => {
  const p = path.join(tmp, name);
  fs.mkdirSync(p, { recursive: true });
  return p;
};

function hub(defaultState = unopenable('default.json')): SharedHub {
  return new SharedHub({
    log: pino({ level: 'silent' }),
    version: '0.0.0-test',
    defaultState,
    stateIdleMs: 60_000,
    graceMs: 1000,
    socket: () => undefined,
  });
}

const badState = {
  code: ErrorCodes.InvalidParams,
  message: 'invalid params: state: a state file path (a non-empty string) expected',
  data: { issues: [{ path: ['state'], message: 'a state file path (a non-empty string) expected' }] },
};

for (const [what, state] of [['a number', 42], ['an empty string', ''], ['null', null], ['an object', { path: 'x' }]] as const) {
  test(`initialize's state of ${what} is refused at once with InvalidParams, and the connection ends`, () => {
    const s = stubTransport();
    hub().accept(s.t);
    s.reader.send(request(7, 'initialize', { state }));
    assert.deepEqual(s.written, [{ jsonrpc: '2.0', id: 7, error: badState }]);
    assert.equal(s.closes(), 1);
  });
}

test('initialize naming a state binds to that one; its error names it, not the default', async () => {
  const s = stubTransport();
  hub().accept(s.t);
  s.reader.send(request(1, 'initialize', { state: unopenable('named.json') }));
  await s.closed;
  assert.equal(s.written.length, 1);
  assert.equal(s.written[0]?.id, 1);
  assert.equal(s.written[0]?.error?.code, ErrorCodes.StorageFailure);
  assert.deepEqual({ ...(s.written[0]?.error?.data as object) }, { code: 'EISDIR' });
  assert.match(s.written[0]?.error?.message ?? '', /named\.json/);
  assert.doesNotMatch(s.written[0]?.error?.message ?? '', /default\.json/);
});

for (const [what, m] of [
  ['initialize without state', request(1, 'initialize', {})],
  ['initialize with null params', request(1, 'initialize', null)],
  ['initialize with array params', request(1, 'initialize', [{ state: 42 }])],
  ['initialize with string params', request(1, 'initialize', 'x')],
  ['another method with a state of a wrong type', request(1, 'status', { state: 42 })],
  ['another method naming a state', request(1, 'status', { state: unopenable('named.json') })],
] as const) {
  test(`${what} binds to the default state`, async () => {
    const s = stubTransport();
    hub().accept(s.t);
    s.reader.send(m);
    await s.closed;
    assert.equal(s.written.length, 1);
    assert.equal(s.written[0]?.id, 1);
    assert.equal(s.written[0]?.error?.code, ErrorCodes.StorageFailure, 'the store\'s own error');
    assert.match(s.written[0]?.error?.message ?? '', /default\.json/);
  });
}

test('a notification or a response first does not choose the state: the first request does, and only requests are answered', () => {
  const s = stubTransport();
  hub().accept(s.t);
  s.reader.send(notification('initialize', { state: 42 }));
  s.reader.send({ jsonrpc: '2.0', id: 3, result: null } as Message);
  s.reader.send({ jsonrpc: '2.0', id: undefined, method: 'initialize', params: { state: 42 } } as unknown as Message);
  assert.deepEqual(s.written, []);
  assert.equal(s.closes(), 0);
  s.reader.send(request(9, 'initialize', { state: '' }));
  assert.deepEqual(s.written, [{ jsonrpc: '2.0', id: 9, error: badState }]);
  assert.equal(s.closes(), 1);
});

test('messages after the state is chosen are not read as first requests again', () => {
  const s = stubTransport();
  hub().accept(s.t);
  s.reader.send(request(1, 'initialize', { state: 42 }));
  s.reader.send(request(2, 'initialize', { state: 42 }));
  assert.deepEqual(s.written.map((a) => a.id), [1]);
  assert.equal(s.closes(), 1);
});

test(`${MAX_HELD_MESSAGES} messages before the first request are held; one more is refused with InvalidRequest`, async () => {
  const fits = stubTransport();
  hub().accept(fits.t);
  for (let i = 0; i < MAX_HELD_MESSAGES - 1; i++) fits.reader.send(notification('n'));
  fits.reader.send(request(1, 'status'));
  await fits.closed;
  assert.equal(fits.written.length, 1);
  assert.notEqual(fits.written[0]?.error?.code, ErrorCodes.InvalidRequest, 'the last one that fits is bound (to the default)');

  const over = stubTransport();
  hub().accept(over.t);
  for (let i = 0; i < MAX_HELD_MESSAGES; i++) over.reader.send(notification('n'));
  assert.equal(over.closes(), 0);
  over.reader.send(request(2, 'status'));
  assert.deepEqual(over.written, [{ jsonrpc: '2.0', id: 2, error: { code: ErrorCodes.InvalidRequest, message: `more than ${MAX_HELD_MESSAGES} messages before the first request` } }]);
  assert.equal(over.closes(), 1);
  over.reader.send(request(3, 'initialize', { state: 42 }));
  assert.equal(over.written.length, 1, 'nothing more is read once refused');
  assert.equal(over.closes(), 1);
});

test('a client that leaves before its first request is ended; one that left after it is not ended again by the hub', () => {
  const early = stubTransport();
  hub().accept(early.t);
  early.reader.send(notification('n'));
  early.reader.close();
  assert.equal(early.closes(), 1);

  const late = stubTransport();
  hub().accept(late.t);
  late.reader.send(request(1, 'initialize', { state: 42 }));
  assert.equal(late.closes(), 1);
  late.reader.close();
  assert.equal(late.closes(), 1);
});

/** The answer to an initialize naming `state`, which the test holds open (its lock taken by this process). */
async function lockedAnswer(state: string): Promise<Written | undefined> {
  const s = stubTransport();
  hub().accept(s.t);
  s.reader.send(request(1, 'initialize', { state }));
  await s.closed;
  assert.equal(s.written.length, 1);
  return s.written[0];
}

test('a locked state answers StateLocked with the store\'s words, the holder\'s pid and, from its record, its socket', async () => {
  const dir = path.join(tmp, 'locked');
  fs.mkdirSync(dir);
  const state = path.join(dir, 'state.json');
  const store = await Store.open(state);
  try {
    const bare = await lockedAnswer(state);
    assert.equal(bare?.error?.code, ErrorCodes.StateLocked);
    assert.match(bare?.error?.message ?? '', /already serving/);
    assert.deepEqual(bare?.error?.data, { pid: process.pid }, 'no record: no socket');

    const socket = path.join(tmp, 'holder.sock');
    await writeServerRecord({ pid: process.pid, socket, state, version: 'test', startedAt: new Date(0).toISOString() });
    assert.deepEqual((await lockedAnswer(state))?.error?.data, { pid: process.pid, socket });

    // The lock file records what its holder wrote: a pid that is not a safe integer is left out.
    const lockFile = path.join(dir, '.herrscher-state', 'server.lock');
    for (const text of ['not a pid', '12345678901234567890']) {
      fs.writeFileSync(lockFile, text);
      const a = await lockedAnswer(state);
      assert.equal(a?.error?.code, ErrorCodes.StateLocked);
      assert.deepEqual(a?.error?.data, { socket }, `lock file ${JSON.stringify(text)}`);
    }
  } finally {
    await store.close();
  }
});
