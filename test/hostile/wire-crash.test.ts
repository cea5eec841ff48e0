// Messages that used to kill the server: each is sent, then the server must still
// answer, on the same connection where it stays open and on a new one.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import pino from 'pino';
import { Service } from '../../src/server/service.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import type { Framing } from '../helpers/wire.js';
import { RawClient } from '../helpers/wire.js';
import { LIMIT, wireServer } from './wire-server.js';

const BAD_CANCELS: [string, unknown][] = [
  ['without params', undefined],
  ['with {}', {}],
  ['with {"id":null}', { id: null }],
  ['with an object id', { id: { x: 1 } }],
  ['with params an array', [1]],
];

for (const framing of ['ndjson', 'lsp'] as Framing[]) {
  for (const [what, params] of BAD_CANCELS) {
    test(`$/cancelRequest ${what} over a socket (${framing}) is ignored and the connection goes on`, LIMIT, async (t) => {
      const w = await wireServer(t);
      const c = await w.connect(framing);
      c.notify('$/cancelRequest', params);
      assert.deepEqual(await c.call('session/list', {}), { sessions: [] });
      const other = await w.connect(framing);
      assert.deepEqual(await other.call('session/list', {}), { sessions: [] });
    });
  }
}

test('$/cancelRequest without params or id over stdio-like streams is ignored', LIMIT, async (t) => {
  const service = await Service.open({
    state: statePathIn(tempDir('hs-wire-')),
    log: pino({ level: 'silent' }),
    version: 'test',
    framing: { maxMessageBytes: 1024 * 1024 },
  });
  t.after(() => service.stop(0, 'test ended'));
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  service.attachStreams(toServer, fromServer, 'stdio');
  const c = new RawClient(fromServer, toServer, 'lsp');
  for (const [, params] of BAD_CANCELS) c.notify('$/cancelRequest', params);
  assert.deepEqual(await c.call('session/list', {}), { sessions: [] });
});

test('a client that subscribes and closes at once: the next append by another client is answered', LIMIT, async (t) => {
  const w = await wireServer(t);
  const writer = await w.connect('ndjson');
  await writer.call('session/add', { session: { name: 'a' } });
  for (let i = 0; i < 20; i++) {
    const gone = await w.connect('ndjson');
    gone.send('watch/subscribe', { transcripts: '*', sessions: true, participants: '*' });
    gone.socket.destroy();
  }
  // Every one of those connections is closed on the server side before the appends start.
  await w.closed(20);
  assert.deepEqual(await writer.call('transcript/append', { name: 'a', entry: { ts: '1', role: 'user', text: 'x' } }), { seq: 0 });
  assert.deepEqual(await writer.call('participants/append', { name: 'a', userId: 'u' }), { added: true });
  assert.ok((await writer.call('session/add', { session: { name: 'b' } })) !== undefined);
  assert.equal(w.server.subscriptions.size, 0, 'no subscription outlives its connection');
});
