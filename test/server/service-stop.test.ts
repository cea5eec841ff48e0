// The ordered stop, once for every way a server stops in process (through Service): the host's
// stdin EOF, the `exit` notification, the state dir removed (SIGTERM and SIGHUP through `serve`,
// which runs the same Service, are test/e2e/serve-stop.test.ts). Each must go: stopping → no new
// connections (the socket file and the server record gone) → every request received answered →
// every accepted write finished and the lock released → stopped, with the exit code serve would
// use and no error line.
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import pino from 'pino';
import { Service } from '../../src/server/service.js';
import { serverRecordPath } from '../../src/transport/server-record.js';
import type { StopSeen } from '../helpers/ordered-stop.js';
import { APPENDS, assertOrderedStop, assertWritesKept, pipelineAppends } from '../helpers/ordered-stop.js';
import type { LogLine } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import { connectRaw, RawClient } from '../helpers/wire.js';

const TIMEOUT = { timeout: 30_000 };

/** A Service on dir/s.sock whose log lines are kept; at the "closed" step the files are looked at. */
async function start(t: { after(fn: () => unknown): void }, lifecycleOwner: 'stdio' | 'any' = 'stdio', stateDirStillThere?: () => void) {
  const dir = tempDir('hs-stop-');
  const state = statePathIn(dir);
  const socket = path.join(dir, 's.sock');
  const seen: StopSeen = { lines: [] };
  const log = pino({ level: 'debug' }, {
    write: (text: string) => {
      const line = JSON.parse(text) as LogLine;
      seen.lines.push(line);
      // The log is written synchronously, so this is the moment the step was reached.
      if (line.step === 'closed') seen.atClosed = { socket: existsSync(socket), record: existsSync(serverRecordPath(state)) };
    },
  });
  const service = await Service.open({ state, log, version: 'test', framing: { maxMessageBytes: 1 << 20 }, lifecycleOwner, ...(stateDirStillThere ? { stateDirStillThere } : {}) });
  t.after(() => service.stop(0, 'test ended'));
  await service.listen(socket);
  assert.equal(existsSync(serverRecordPath(state)), true, 'listening writes the server record');
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  service.attachStreams(toServer, fromServer, 'stdio');
  const host = new RawClient(fromServer, toServer, 'ndjson');
  const client = await connectRaw(socket, 'ndjson', t);
  return { dir, state, socket, seen, service, host, client };
}

test('stdin EOF: the host is gone, the stop answers what it sent, finishes the writes and stops with 0', TIMEOUT, async (t) => {
  const s = await start(t);
  await s.host.call('session/add', { session: { name: 'a' } });
  const replies = pipelineAppends(s.host, 'a');
  s.host.end();
  const stopped = await s.service.stopped;
  assert.deepEqual(stopped, { code: 0, why: 'stdin closed' });
  assertOrderedStop(s.seen, 'stdin closed', 0);
  assert.deepEqual(s.seen.atClosed, { socket: false, record: false }, 'no new connections once the stop began');
  await assertWritesKept(s.dir, await replies);
  await s.client.ended;
});

test('exit after shutdown: 0; the appends sent before it are answered and kept', TIMEOUT, async (t) => {
  const s = await start(t);
  await s.host.call('session/add', { session: { name: 'a' } });
  const replies = pipelineAppends(s.host, 'a');
  // shutdown runs after the writes sent before it, as a host awaits it before it sends exit.
  assert.equal(await s.host.call('shutdown'), null);
  s.host.notify('exit');
  assert.deepEqual(await s.service.stopped, { code: 0, why: 'exit notification' });
  assertOrderedStop(s.seen, 'exit notification', 0);
  assert.deepEqual(s.seen.atClosed, { socket: false, record: false });
  await assertWritesKept(s.dir, await replies);
});

test('exit without shutdown: 1, as LSP says; a socket client may send it when no host owns the server', TIMEOUT, async (t) => {
  const s = await start(t, 'any');
  await s.client.call('session/add', { session: { name: 'a' } });
  const replies = pipelineAppends(s.client, 'a');
  s.client.notify('exit');
  assert.deepEqual(await s.service.stopped, { code: 1, why: 'exit notification' });
  assertOrderedStop(s.seen, 'exit notification', 1);
  await assertWritesKept(s.dir, await replies);
});

test('the state dir removed: the server stops with 0, says why at warn, and logs no error', TIMEOUT, async (t) => {
  const s = await start(t);
  await s.host.call('session/add', { session: { name: 'a' } });
  assert.deepEqual(await pipelineAppends(s.client, 'a'), Array.from({ length: APPENDS }, (_, i) => ({ seq: i })));
  rmSync(s.dir, { recursive: true, force: true });
  assert.deepEqual(await s.service.stopped, { code: 0, why: 'state dir removed' });
  assertOrderedStop(s.seen, 'state dir removed', 0);
  const warn = s.seen.lines.find((l) => l.level === 40 && /state dir .* was removed/.test(l.msg ?? ''));
  assert.ok(warn, `a warn line says the state dir was removed:\n${s.seen.lines.map((l) => JSON.stringify(l)).join('\n')}`);
  assert.equal(warn.dir, s.service.store.dir, 'naming the dir (docs/operations.md)');
  await s.client.ended;
});

test('a state dir that stays: our own state.json replacements do not stop the server', TIMEOUT, async (t) => {
  let looked: (() => void) | undefined;
  const s = await start(t, 'stdio', () => looked?.());
  for (let i = 0; i < 20; i++) await s.host.call('session/add', { session: { name: `s${i}` } });
  // The dir watch's next look, after the replacements' events (or the stop it would cause).
  await Promise.race([new Promise<void>((resolve) => (looked = resolve)), s.service.stopped]);
  assert.equal(s.seen.lines.some((l) => l.msg === 'stopping'), false);
  assert.deepEqual(await s.client.call('session/find', { name: 's19' }).then((r) => (r as { session: { name: string } }).session.name), 's19');
});
