// The client library inside an editor (issue 13 item 5): spawn() runs the server with Electron
// acting as Node (ELECTRON_RUN_AS_NODE=1) or with a given `node`; SocketError and its codes are
// exported; connect() finds the server by the discovery rule ($HERRSCHER_STATE_SOCKET here).
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { childCommand } from '../../src/client/child-command.js';
import { connect, SocketError, SocketErrorCodes, spawn } from '../../src/client/index.js';
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

test('inside Electron the command is Electron itself with ELECTRON_RUN_AS_NODE=1; outside, plain Node; a node option wins', () => {
  const o = { state: '/s/state.json', cli: '/x/cli.js', env: { PATH: '/bin' } };
  const inElectron = childCommand(o, { execPath: '/Applications/Code.app/Electron', electron: '30.0.0' });
  assert.equal(inElectron.command, '/Applications/Code.app/Electron');
  assert.equal(inElectron.env.ELECTRON_RUN_AS_NODE, '1');
  assert.deepEqual(inElectron.args, ['/x/cli.js', 'serve', '--stdio', '--state', '/s/state.json']);
  const inNode = childCommand(o, { execPath: '/usr/bin/node' });
  assert.equal(inNode.env.ELECTRON_RUN_AS_NODE, undefined);
  const given = childCommand({ ...o, node: '/opt/node/bin/node' }, { execPath: '/Applications/Code.app/Electron', electron: '30.0.0' });
  assert.equal(given.command, '/opt/node/bin/node');
  assert.equal(given.env.ELECTRON_RUN_AS_NODE, undefined);
  const locked = childCommand({ ...o, lockFd: 17 }, { execPath: '/usr/bin/node' });
  assert.deepEqual(locked.args.slice(-2), ['--lock-fd', '3']);
  assert.deepEqual(locked.stdio, ['pipe', 'pipe', 'inherit', 17]);
});

test('spawn() from a simulated Electron host (execPath and process.versions.electron overridden) serves', { timeout: 30_000 }, async () => {
  const realExecPath = process.execPath;
  process.execPath = fakeElectron();
  Object.defineProperty(process.versions, 'electron', { value: '30.0.0', configurable: true, enumerable: true });
  let server;
  try {
    server = spawn({ state: statePathIn(tempDir()), cli: CLI, args: ['--no-socket'], env: env() });
  } finally {
    process.execPath = realExecPath;
    delete (process.versions as Record<string, string | undefined>).electron;
  }
  const { session } = await server.sessionAdd({ session: { name: 'from-electron' } });
  assert.equal(session.name, 'from-electron');
  await server.close();
  assert.equal(await server.exited, 0, 'the fake Electron ran the server as Node (it exits 97 otherwise)');
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
