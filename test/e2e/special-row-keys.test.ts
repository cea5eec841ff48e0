// Unknown session-row keys are stored and returned (as Go keeps them in state.json), including the
// ones a JavaScript object treats specially: `__proto__` set a prototype instead of a key and was
// dropped, answered with success. Round trip through the wire, the file and a restart, against
// the in-process Service on its stdio-like connection (parsing and storing are the subject, not
// the process).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { Ctx } from '../helpers/server.js';
import { startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import type { RawClient } from '../helpers/wire.js';

const TIMEOUT = 120_000;
/** Own keys of a row as JSON.parse reads them (an own "__proto__" included). */
const SPECIAL = '"__proto__":{"polluted":true},"constructor":"c","hasOwnProperty":5,"toString":["t"],"valueOf":"v","__defineGetter__":{"g":1}';
const WANT = JSON.parse(`{${SPECIAL}}`) as Record<string, unknown>;

/** A server on `dir` as `serve --stdio` runs it, its host connection (NDJSON). */
async function serve(t: Ctx, dir: string): Promise<{ rpc: RawClient; exited: Promise<number> }> {
  const srv = await startServer(t, { dir, lifecycleOwner: 'stdio' });
  return { rpc: srv.stdio('ndjson'), exited: srv.exited };
}

/** shutdown, then exit: the code `serve` would exit with. */
async function shutdownAndExit(server: { rpc: RawClient; exited: Promise<number> }): Promise<number> {
  assert.equal((await server.rpc.request('shutdown')).result, null);
  server.rpc.notify('exit');
  return server.exited;
}

/** The own entries of `row`'s special keys, compared as JSON text (deepEqual would follow prototypes). */
function special(row: unknown): string {
  const r = row as Record<string, unknown>;
  return JSON.stringify(Object.keys(WANT).map((k) => [k, Object.prototype.hasOwnProperty.call(r, k) ? r[k] : 'MISSING']));
}

test('unknown row keys __proto__, constructor, hasOwnProperty, toString… are stored and returned exactly, also after a restart', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const state = statePathIn(dir);
  let server = await serve(t, dir);
  server.rpc.sendBody(`{"jsonrpc":"2.0","id":1,"method":"session/add","params":{"session":{"name":"a",${SPECIAL}}}}`);
  const added = await server.rpc.response(1);
  assert.equal(added.error, undefined, JSON.stringify(added));
  const want = special(WANT);
  assert.equal(special((added.result as { session: unknown }).session), want, 'the reply to session/add');
  const found = (await server.rpc.call('session/find', { name: 'a' })) as { session: unknown };
  assert.equal(special(found.session), want, 'session/find');
  assert.equal(Object.getPrototypeOf(found.session), Object.prototype);
  assert.equal(await shutdownAndExit(server), 0);

  const onDisk = (JSON.parse(readFileSync(state, 'utf8')) as { sessions: unknown[] }).sessions[0];
  assert.equal(special(onDisk), want, 'state.json');

  server = await serve(t, dir);
  const again = (await server.rpc.call('session/find', { name: 'a' })) as { session: unknown };
  assert.equal(special(again.session), want, 'session/find after a restart');
  const list = (await server.rpc.call('session/list', {})) as { sessions: unknown[] };
  assert.equal(special(list.sessions[0]), want, 'session/list after a restart');
  assert.equal(await shutdownAndExit(server), 0);
});

test('state/save keeps __proto__ and constructor as unknown fields of the document and of its rows, through the file and a restart', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const state = statePathIn(dir);
  let server = await serve(t, dir);
  const { revision } = (await server.rpc.call('state/get', {})) as { revision: number };
  server.rpc.sendBody(`{"jsonrpc":"2.0","id":1,"method":"state/save","params":{"revision":${revision},"state":{"home":{"id":"h","type":"category"},${SPECIAL},"sessions":[{"name":"a","channelID":"c","type":"text","cmd":"x",${SPECIAL}}]}}}`);
  const saved = await server.rpc.response(1);
  assert.equal(saved.error, undefined, JSON.stringify(saved));
  const want = special(WANT);
  const check = async (label: string): Promise<void> => {
    const got = (await server.rpc.call('state/get', {})) as { state: { sessions: unknown[] } };
    assert.equal(special(got.state), want, `${label}: the document`);
    assert.equal(special(got.state.sessions[0]), want, `${label}: its row`);
  };
  await check('state/get');
  assert.equal(await shutdownAndExit(server), 0);
  const onDisk = JSON.parse(readFileSync(state, 'utf8')) as { sessions: unknown[] };
  assert.equal(special(onDisk), want, 'state.json: the document');
  assert.equal(special(onDisk.sessions[0]), want, 'state.json: its row');
  server = await serve(t, dir);
  await check('after a restart');
  assert.equal(await shutdownAndExit(server), 0);
});
