// The ordered stop of `serve` on SIGTERM, SIGHUP and its state dir removed: the same steps as the
// in-process stops of test/server/service-stop.test.ts, seen in the child's log, with the exit
// code and the files a process leaves (signals and exit codes are the subject, so the built CLI).
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { serverRecordPath } from '../../src/transport/server-record.js';
import { serveSocket } from '../helpers/cli.js';
import { APPENDS, assertOrderedStop, assertWritesKept, pipelineAppends } from '../helpers/ordered-stop.js';
import type { LogLine } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = { timeout: 30_000 };

for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
  test(`${signal} to serve: the same ordered stop, exit 0`, TIMEOUT, async (t) => {
    const dir = tempDir('hs-stop-');
    const state = statePathIn(dir);
    const socket = path.join(dir, 's.sock');
    const server = await serveSocket(t, state, socket, ['--log-level', 'debug', '--log-format', 'json']);
    const rpc = await server.connect('ndjson');
    await rpc.call('session/add', { session: { name: 'a' } });
    assert.equal(existsSync(serverRecordPath(state)), true, 'serve records its socket');
    // Sent, not answered yet: the stop answers what it received and finishes those writes.
    const replies = pipelineAppends(rpc, 'a');
    server.child.kill(signal);
    assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr());
    const lines = server.stderr().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);
    assertOrderedStop({ lines }, signal, 0);
    assert.equal(existsSync(socket), false, 'the socket file is gone');
    assert.equal(existsSync(serverRecordPath(state)), false, 'the record is gone');
    await assertWritesKept(dir, await replies);
  });
}

test('serve whose state dir is removed exits 0 by itself, with a warn line and no error line', TIMEOUT, async (t) => {
  const dir = tempDir('hs-stop-');
  const state = statePathIn(path.join(dir, 'state'));
  const socket = path.join(dir, 's.sock');
  const server = await serveSocket(t, state, socket, ['--log-level', 'debug', '--log-format', 'json']);
  const rpc = await server.connect('ndjson');
  await rpc.call('session/add', { session: { name: 'a' } });
  assert.deepEqual(await pipelineAppends(rpc, 'a'), Array.from({ length: APPENDS }, (_, i) => ({ seq: i })));
  rmSync(path.dirname(state), { recursive: true, force: true });
  assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr());
  const lines = server.stderr().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);
  assertOrderedStop({ lines }, 'state dir removed', 0);
  assert.ok(lines.some((l) => l.level === 40 && /was removed/.test(l.msg ?? '')), server.stderr());
  assert.equal(existsSync(socket), false, 'the socket outside the removed dir is removed too');
});
