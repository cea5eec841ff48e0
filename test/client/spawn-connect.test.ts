// The client library inside an editor: spawn() runs the server with a given `node`, else inside
// Electron with a Node 20+ found on PATH, else with Electron acting as Node
// (ELECTRON_RUN_AS_NODE=1); SocketError and its codes are exported; connect() finds the server by
// the discovery rule ($HERRSCHER_STATE_SOCKET here).
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { childCommand, nodeOnPath } from '../../src/client/child-command.js';
import { ConnectionClosedError, connect, SocketError, SocketErrorCodes, spawn, StartError } from '../../src/client/index.js';
import { CLI, privateRuntimeDir } from '../helpers/cli.js';
import { startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const env = (): NodeJS.ProcessEnv => ({ ...process.env, HERRSCHER_STATE_DIR: undefined, HERRSCHER_STATE_SOCKET: undefined, XDG_RUNTIME_DIR: privateRuntimeDir() });

/** A stand-in for the Electron binary: it runs a script as Node only with ELECTRON_RUN_AS_NODE=1, as Electron does. */
function fakeElectron(): string {
  const bin = path.join(tempDir(), 'electron');
  writeFileSync(bin, `#!/bin/sh\n[ "$ELECTRON_RUN_AS_NODE" = 1 ] || { echo "electron: would open a window" >&2; exit 97; }\nexec ${JSON.stringify(process.execPath)} "$@"\n`);
  chmodSync(bin, 0o755);
  return bin;
}

test('inside Electron the command is a Node 20+ on PATH, else Electron itself with ELECTRON_RUN_AS_NODE=1; outside, plain Node; a node option wins', () => {
  const o = { state: '/s/state.json', cli: '/x/cli.js', env: { PATH: '/bin', ELECTRON_RUN_AS_NODE: '1' } };
  const electron = { execPath: '/Applications/Code.app/Electron', electron: '30.0.0' };
  const withNode = childCommand(o, electron, () => '/usr/local/bin/node');
  assert.equal(withNode.command, '/usr/local/bin/node');
  assert.equal(withNode.env.ELECTRON_RUN_AS_NODE, undefined);
  const inElectron = childCommand(o, electron, () => undefined);
  assert.equal(inElectron.command, '/Applications/Code.app/Electron');
  assert.equal(inElectron.env.ELECTRON_RUN_AS_NODE, '1');
  assert.deepEqual(inElectron.args, ['/x/cli.js', 'serve', '--stdio', '--state', '/s/state.json']);
  const inNode = childCommand({ ...o, env: { PATH: '/bin' } }, { execPath: '/usr/bin/node' }, () => assert.fail('outside Electron nothing is looked up'));
  assert.equal(inNode.command, '/usr/bin/node');
  assert.equal(inNode.env.ELECTRON_RUN_AS_NODE, undefined);
  const given = childCommand({ ...o, env: { PATH: '/bin' }, node: '/opt/node/bin/node' }, electron, () => assert.fail('a node option is not looked up'));
  assert.equal(given.command, '/opt/node/bin/node');
  assert.equal(given.env.ELECTRON_RUN_AS_NODE, undefined);
  const locked = childCommand({ ...o, lockFd: 17 }, { execPath: '/usr/bin/node' });
  assert.deepEqual(locked.args.slice(-2), ['--lock-fd', '3']);
  assert.deepEqual(locked.stdio, ['pipe', 'pipe', 'pipe', 17]);
});

/** A folder holding `node`: a stand-in that prints `version` for --version and otherwise runs this Node. */
function nodeDir(version: string): string {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'node'), `#!/bin/sh\n[ "$1" = --version ] && { echo ${version}; exit 0; }\nexec ${JSON.stringify(process.execPath)} "$@"\n`);
  chmodSync(path.join(dir, 'node'), 0o755);
  return dir;
}

test('nodeOnPath: the first node on PATH that is Node 20 or later; relative entries and older Nodes skipped', () => {
  const old = nodeDir('v18.20.0');
  const good = nodeDir('v22.3.0');
  const also = nodeDir('v24.0.0');
  assert.equal(nodeOnPath({ PATH: [old, 'relative/bin', good, also].join(path.delimiter) }), path.join(good, 'node'));
  assert.equal(nodeOnPath({ PATH: [old, tempDir()].join(path.delimiter) }), undefined);
  assert.equal(nodeOnPath({}), undefined);
});

/** Runs `fn` as if inside Electron: execPath is `bin`, process.versions.electron is set. */
function asElectron<T>(bin: string, fn: () => T): T {
  const realExecPath = process.execPath;
  process.execPath = bin;
  Object.defineProperty(process.versions, 'electron', { value: '30.0.0', configurable: true, enumerable: true });
  try {
    return fn();
  } finally {
    process.execPath = realExecPath;
    delete (process.versions as Record<string, string | undefined>).electron;
  }
}

test('spawn() from a simulated Electron host with no node on PATH runs Electron as Node', { timeout: 30_000 }, async () => {
  const server = asElectron(fakeElectron(), () => spawn({ state: statePathIn(tempDir()), cli: CLI, args: ['--no-socket'], env: { ...env(), PATH: tempDir() } }));
  const { session } = await server.sessionAdd({ session: { name: 'from-electron' } });
  assert.equal(session.name, 'from-electron');
  await server.close();
  assert.equal(await server.exited, 0, 'the fake Electron ran the server as Node (it exits 97 otherwise)');
});

test('spawn() from a simulated Electron host runs a Node on PATH, not Electron, whatever Electron\'s version', { timeout: 30_000 }, async () => {
  // An Electron that cannot serve at all (as one whose ABI has no prebuilt binding): exits 97 always.
  const bin = path.join(tempDir(), 'electron');
  writeFileSync(bin, '#!/bin/sh\necho "electron: no binding for this ABI" >&2\nexit 97\n');
  chmodSync(bin, 0o755);
  const PATH = nodeDir('v20.19.0');
  const server = asElectron(bin, () => spawn({ state: statePathIn(tempDir()), cli: CLI, args: ['--no-socket'], env: { ...env(), PATH } }));
  const { session } = await server.sessionAdd({ session: { name: 'via-node' } });
  assert.equal(session.name, 'via-node');
  await server.close();
  assert.equal(await server.exited, 0);
});

test('SocketError is exported with its codes: a missing socket rejects ENOENT, naming the path', async () => {
  const at = path.join(tempDir(), 'none.sock');
  await assert.rejects(connect({ socket: at, timeoutMs: 5000 }), (err: unknown) => {
    assert.ok(err instanceof SocketError);
    assert.equal(err.code, SocketErrorCodes.ENOENT);
    assert.ok(err.message.includes(at), err.message);
    return true;
  });
  assert.equal(SocketErrorCodes.EUNSAFE, 'EUNSAFE');
});

test('connect() without a socket follows $HERRSCHER_STATE_SOCKET', async (t) => {
  const srv = await startServer(t);
  const client = await connect({ env: { ...env(), HERRSCHER_STATE_SOCKET: srv.socket } });
  assert.equal((await client.status()).statePath, srv.store.statePath);
  await client.close();
});

test('a spawned server that cannot start rejects the pending and later calls with a StartError: its exit code and its last stderr lines', { timeout: 60_000 }, async () => {
  const state = statePathIn(tempDir());
  writeFileSync(state, '{not json');
  const server = spawn({ state, cli: CLI, env: env() });
  const pending = server.sessionList();
  const err = await pending.then(
    () => assert.fail('a server on a broken state.json answered'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof StartError, `a StartError, not ${String(err)}`);
  assert.ok(err instanceof ConnectionClosedError, 'still a ConnectionClosedError to code that handles those');
  assert.equal(err.exitCode, 1);
  assert.equal(err.signal, null);
  assert.match(err.stderr.at(-1) ?? '', /cannot open the state .*state\.json: state\.json: invalid JSON/);
  assert.match(err.message, /^herrscher-state serve exited with code 1 before it answered: herrscher-state: cannot open the state .*invalid JSON.*; fix /);
  const later = await server.sessionList().then(
    () => assert.fail('a later call answered'),
    (e: unknown) => e,
  );
  assert.ok(later instanceof StartError && later.exitCode === 1 && later.stderr.join('\n') === err.stderr.join('\n'), `a later call: ${String(later)}`);
  assert.equal(await server.exited, 1);
  await server.close();
});

test('a spawn() whose binary does not exist rejects its calls with a StartError saying so', { timeout: 60_000 }, async () => {
  const server = spawn({ state: statePathIn(tempDir()), cli: CLI, env: env(), node: path.join(tempDir(), 'no-such-node') });
  const err = await server.status().then(
    () => assert.fail('answered'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof StartError, String(err));
  assert.equal(err.exitCode, null);
  assert.match(err.message, /could not be started \(.*no-such-node\): spawn .*no-such-node ENOENT/);
});

test('connect({ wait }) waits for a server that is not there yet, and checks it is the state asked for', { timeout: 60_000 }, async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const state = statePathIn(dir);
  // Nothing there yet: without wait, at once, naming the socket and the command to start one.
  await assert.rejects(connect({ socket, env: env() }), {
    code: 'ENOENT',
    message: `no server at socket ${socket}: the file does not exist; start one with \`herrscher-state serve --socket ${socket}\``,
  });
  await assert.rejects(connect({ socket, state, env: env() }), {
    code: 'ENOSERVER',
    message: new RegExp(`^no server for ${state.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .*; start one with \`herrscher-state serve --state ${state.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\`$`),
  });
  const waiting = connect({ socket, state, wait: true, timeoutMs: 50_000, env: env() });
  const srv = await startServer(t, { dir, socket });
  const client = await waiting;
  assert.equal((await client.status()).statePath, srv.store.statePath);
  await client.close();
  // A bound: a server that never comes is "no server" once timeoutMs has passed, saying it waited.
  const nowhere = path.join(tempDir(), 'never.sock');
  await assert.rejects(connect({ socket: nowhere, wait: true, timeoutMs: 300, env: env() }), { code: 'ENOENT', message: /the file does not exist; start one with .*\(waited 300 ms\)$/ });
});
