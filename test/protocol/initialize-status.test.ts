// Forward compatible the LSP way: `initialize` takes what a real LSP client sends and
// answers which methods and params this server has; every other method stays strict. `status`
// reports identity, load and storage health. In process: the protocol is the subject.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PROTOCOL_VERSION } from '../../src/protocol/lifecycle.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import { methodList } from '../../src/protocol/table.js';
import { paramNames } from '../../src/server/server.js';
import { runToEnd } from '../helpers/cli.js';
import { startServer } from '../helpers/server.js';

/** What vscode-languageclient 9 sends (trimmed of the long capability lists, with keys we do not know). */
const vscodeInitialize = {
  processId: 4242,
  clientInfo: { name: 'Visual Studio Code', version: '1.95.0' },
  locale: 'en',
  rootPath: '/home/u/project',
  rootUri: 'file:///home/u/project',
  capabilities: {
    workspace: { applyEdit: true, workspaceEdit: { documentChanges: true }, configuration: true },
    textDocument: { synchronization: { dynamicRegistration: true, willSave: true } },
    window: { workDoneProgress: true },
    general: { positionEncodings: ['utf-16'] },
  },
  initializationOptions: { anything: [1, 2, 3] },
  trace: 'off',
  workspaceFolders: [{ uri: 'file:///home/u/project', name: 'project' }],
};

test('initialize with a real LSP client\'s params succeeds and answers a semver protocol version', async (t) => {
  const srv = await startServer(t);
  const raw = await srv.raw('lsp');
  const r = (await raw.call('initialize', vscodeInitialize)) as { protocolVersion: string; statePath: string; capabilities: { methods: string[]; params: Record<string, string[]> } };
  assert.equal(r.protocolVersion, PROTOCOL_VERSION);
  assert.match(r.protocolVersion, /^\d+\.\d+\.\d+$/);
  assert.equal(r.statePath, srv.store.statePath);
  assert.deepEqual([...r.capabilities.methods].sort(), methodList.map((d) => d.method).sort());
  const processIdNull = await raw.request('initialize', { processId: null, rootUri: null, capabilities: {} });
  assert.equal(processIdNull.error, undefined, JSON.stringify(processIdNull.error));
});

test('initialize capabilities say which params each method has', async (t) => {
  const srv = await startServer(t);
  const client = await srv.client();
  const { capabilities } = await client.initialize({});
  assert.deepEqual(capabilities.params['session/find'], ['name']);
  assert.deepEqual(capabilities.params['transcript/read'], paramNames(methodList.find((d) => d.method === 'transcript/read')!));
  assert.ok(capabilities.params['transcript/read']?.includes('before'));
  assert.deepEqual(capabilities.params['session/list'], []);
  assert.deepEqual(Object.keys(capabilities.params).sort(), capabilities.methods.slice().sort());
});

test('initialize still refuses a known LSP field of the wrong type, and other methods stay strict', async (t) => {
  const srv = await startServer(t);
  const raw = await srv.raw('ndjson');
  const bad = await raw.request('initialize', { processId: 'not a pid' });
  assert.equal(bad.error?.code, -32602);
  const typo = await raw.request('session/find', { name: 'a', nmae: 'b' });
  assert.equal(typo.error?.code, -32602, 'an unknown key in any other method is an error');
});

test('status reports pid, version, state, load and revision, healthy on a fresh server', async (t) => {
  const srv = await startServer(t, { version: '9.9.9' });
  const client = await srv.client();
  await client.watchSubscribe({ sessions: true });
  await client.sessionAdd({ session: { name: 'a' } });
  const s = await client.status();
  assert.equal(s.pid, process.pid);
  assert.equal(s.version, '9.9.9');
  assert.equal(s.protocolVersion, PROTOCOL_VERSION);
  assert.equal(s.statePath, srv.store.statePath);
  assert.equal(s.durability, 'sync');
  assert.equal(s.connections, 1);
  assert.equal(s.subscriptions, 1);
  assert.equal(s.statesOpen, undefined, 'a dedicated server serves one state: no statesOpen');
  assert.equal(s.revision, srv.store.revision);
  assert.ok(s.revision >= 1);
  assert.equal(s.walBytes, srv.store.walBytes);
  assert.deepEqual([s.healthy, s.checkpointFailing, s.lastStorageError], [true, false, null]);
  assert.ok(Date.parse(s.startedAt) <= Date.now());
});

test('status reports a recent storage error as unhealthy, with its code and time', async (t) => {
  const srv = await startServer(t);
  const client = await srv.client();
  const err = Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
  srv.store.health.recordError('compaction of transcripts/a.jsonl failed', err);
  const s = await client.status();
  assert.equal(s.healthy, false);
  assert.equal(s.lastStorageError?.code, 'ENOSPC');
  assert.match(s.lastStorageError?.message ?? '', /compaction of transcripts\/a\.jsonl failed/);
  assert.ok(Date.parse(s.lastStorageError?.at ?? '') >= Date.parse(s.startedAt), 'an ISO time since the start');
});

test('herrscher-state status prints the verdict and exits 0 when healthy, 1 when not; --json prints the method result', { timeout: 30_000 }, async (t) => {
  const srv = await startServer(t);
  const healthy = await runToEnd(['status', '--socket', srv.socket]);
  assert.equal(healthy.code, 0, healthy.stderr);
  assert.match(healthy.stdout, /^health: +healthy$/m);
  assert.match(healthy.stdout, new RegExp(`^state: +${srv.store.statePath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
  srv.store.health.recordError('checkpoint', Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
  const sick = await runToEnd(['status', '--json', '--socket', srv.socket]);
  assert.equal(sick.code, 1);
  const parsed = JSON.parse(sick.stdout) as { healthy: boolean; lastStorageError: { code: string } };
  assert.deepEqual([parsed.healthy, parsed.lastStorageError.code], [false, 'EIO']);
  const none = await runToEnd(['status', '--socket', `${srv.dir}/nobody.sock`]);
  assert.equal(none.code, 1, 'no server answering is exit 1 too');
  assert.match(none.stderr, /no server at socket/);
});

test('status reports a failing checkpoint (injected through the fs seam) as unhealthy', async (t) => {
  let failTruncate = false;
  const io = withIo({
    truncate: async (fh, len) => {
      if (failTruncate) throw Object.assign(new Error('EIO: i/o error, ftruncate'), { code: 'EIO', syscall: 'ftruncate' });
      return nodeIo.truncate(fh, len);
    },
  });
  // Every record passes the 1-byte threshold: each append queues a checkpoint, which runs before the next append's record.
  const srv = await startServer(t, { store: { io, walCheckpointBytes: 1 } });
  const client = await srv.client();
  await client.sessionAdd({ session: { name: 'a' } });
  failTruncate = true;
  const entry = { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'x' };
  await client.transcriptAppend({ name: 'a', entry });
  await client.transcriptAppend({ name: 'a', entry });
  const sick = await client.status();
  assert.equal(sick.checkpointFailing, true);
  assert.equal(sick.healthy, false);
  assert.equal(sick.lastStorageError?.code, 'EIO');
  assert.ok(sick.walBytes > 0, 'the log keeps its records while it cannot be emptied');
});
