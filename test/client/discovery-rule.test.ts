// The one rule that finds a server, step by step, on temp folders: an explicit socket >
// $HERRSCHER_STATE_SOCKET > the live record of the state > the per-user shared socket when its
// file exists > the default socket; and the state a client names in initialize for each step.
// Only files are made (a record with this process's pid is live): the rule reads nothing else.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { describeSource, discoverSocket, stateToName } from '../../src/transport/discovery.js';
import { writeServerRecord } from '../../src/transport/server-record.js';
import { defaultSocketPath, SHARED_SOCKET_NAME, sharedSocketPath } from '../../src/transport/socket.js';
import { tempDir } from '../helpers/temp-dir.js';

/** An environment of its own: a state dir (the default state) and a runtime folder. */
function world(): { env: NodeJS.ProcessEnv; state: string; folder: string } {
  const stateDir = tempDir('hs-st-');
  const runtime = tempDir('hs-run-');
  const folder = path.join(runtime, 'herrscher-state');
  mkdirSync(folder, { mode: 0o700 });
  return { env: { HERRSCHER_STATE_DIR: stateDir, XDG_RUNTIME_DIR: runtime }, state: path.join(stateDir, 'state.json'), folder };
}

test('record > shared > default: each step applies only when the ones before it do not', async () => {
  const { env, state, folder } = world();
  const shared = path.join(folder, SHARED_SOCKET_NAME);
  assert.equal(sharedSocketPath(env), shared);

  // Nothing there: the default socket.
  assert.deepEqual(await discoverSocket({ env }), { path: defaultSocketPath(undefined, env), source: 'default' });

  // The shared socket's file: the shared server, for the default state and for any state named.
  writeFileSync(shared, '');
  assert.deepEqual(await discoverSocket({ env }), { path: shared, source: 'shared' });
  const other = path.join(tempDir('hs-other-'), 'state.json');
  assert.deepEqual(await discoverSocket({ env, state: other }), { path: shared, source: 'shared' });

  // A live record of the state: its own server, before the shared one; another state's record does not count.
  const own = path.join(tempDir('hs-sock-'), 'own.sock');
  await writeServerRecord({ pid: process.pid, socket: own, state, version: 'test', startedAt: new Date().toISOString() });
  assert.deepEqual(await discoverSocket({ env }), { path: own, source: 'record' });
  assert.deepEqual(await discoverSocket({ env, state }), { path: own, source: 'record' });
  assert.deepEqual(await discoverSocket({ env, state: other }), { path: shared, source: 'shared' });

  // The environment and an explicit socket come before all of them.
  const envSocket = path.join(folder, 'env.sock');
  assert.deepEqual(await discoverSocket({ env: { ...env, HERRSCHER_STATE_SOCKET: envSocket } }), { path: envSocket, source: 'env' });
  assert.deepEqual(await discoverSocket({ env: { ...env, HERRSCHER_STATE_SOCKET: envSocket }, socket: '/given.sock' }), { path: '/given.sock', source: 'explicit' });

  // The shared socket gone: the record still wins, and without it the default is back.
  rmSync(shared);
  assert.deepEqual(await discoverSocket({ env, state: other }), { path: defaultSocketPath(undefined, env), source: 'default' });
});

test('the shared step takes any file at the path (a dangling link too: the socket checks then say what it is) and nothing else', async () => {
  const { env, folder } = world();
  const shared = path.join(folder, SHARED_SOCKET_NAME);
  symlinkSync(path.join(folder, 'nowhere'), shared);
  assert.equal((await discoverSocket({ env })).source, 'shared');
  rmSync(shared);
  mkdirSync(path.join(folder, 'herrscher-state-shared.sock.d'));
  assert.equal((await discoverSocket({ env })).source, 'default', 'a neighbour of the name is not the name');
  // A runtime folder that is no folder: nothing there, no throw.
  const runtime = path.join(tempDir(), 'file');
  writeFileSync(runtime, '');
  assert.equal((await discoverSocket({ env: { ...env, XDG_RUNTIME_DIR: runtime } })).source, 'default');
});

test('the state named in initialize: the one asked for, absolute; on the shared server without one, the client\'s default state; elsewhere none', () => {
  const { env, state } = world();
  const at = (source: 'explicit' | 'env' | 'record' | 'shared' | 'default') => ({ path: '/s.sock', source });
  assert.equal(stateToName(at('default'), 'rel/state.json', env), path.resolve('rel/state.json'));
  assert.equal(stateToName(at('shared'), '/x/state.json', env), '/x/state.json');
  assert.equal(stateToName(at('shared'), undefined, env), state);
  assert.equal(stateToName(at('shared'), undefined, { ...env, HERRSCHER_STATE_DIR: 'relative-dir' }), path.resolve('relative-dir', 'state.json'));
  for (const source of ['explicit', 'env', 'record', 'default'] as const) assert.equal(stateToName(at(source), undefined, env), undefined, source);
});

test('describeSource says which step chose the socket, the shared server by name', () => {
  assert.equal(describeSource({ path: '/r/s.sock', source: 'shared' }), '/r/s.sock (the per-user shared server; no server recorded itself for the state file)');
  assert.match(describeSource({ path: '/r/d.sock', source: 'default' }), /^\/r\/d\.sock \(the default; .*no shared server runs\)$/);
  assert.match(describeSource({ path: '/r/x.sock', source: 'record' }), /recorded by the server of the state file/);
});
