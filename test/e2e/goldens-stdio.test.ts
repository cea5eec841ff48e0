// Every Go golden replayed over the wire against the spawned CLI (`serve --stdio`), once per
// framing: the results Go returned, then, after an orderly shutdown + exit, the exact bytes Go
// left on disk.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { serveStdio, shutdownAndExit } from '../helpers/cli.js';
import { assertFilesMatch, assertResult, expandOp, loadGoldens } from '../helpers/goldens.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import type { Framing, Message } from '../helpers/wire.js';

const ok = (reply: Message, what: string): unknown => {
  assert.equal(reply.error, undefined, `${what} answered an error: ${JSON.stringify(reply.error)}`);
  assert.ok('result' in reply, `${what} has a result`);
  return reply.result;
};

for (const framing of ['lsp', 'ndjson'] as Framing[]) {
  describe(`goldens over stdio with ${framing} framing`, () => {
    for (const golden of loadGoldens()) {
      test(`golden ${golden.name} over ${framing}: ${golden.about}`, { timeout: 60_000 }, async (t) => {
        const dir = tempDir();
        if (golden.stateFile !== undefined) writeFileSync(statePathIn(dir), golden.stateFile);
        const server = serveStdio(t, statePathIn(dir), framing);
        for (const [i, op] of golden.ops.entries()) {
          const calls = expandOp(op);
          // An expanded op (1000 appends) is pipelined: the server applies a connection's
          // requests in arrival order, so the file must come out exactly as sequential calls.
          const ids = calls.map((c) => server.rpc.send(c.method, c.params));
          const replies = await Promise.all(ids.map((id) => server.rpc.response(id)));
          for (const [j, reply] of replies.entries()) {
            const got = ok(reply, `op ${i} ${op.method} #${j}`);
            if (op.expect !== undefined) assertResult(got, op.expect, `op ${i} ${op.method}`);
          }
        }
        assert.deepEqual(await shutdownAndExit(server), { code: 0, signal: null }, `exit after shutdown; stderr:\n${server.stderr()}`);
        assert.deepEqual(server.rpc.garbage, [], 'stdout held only frames');
        assertFilesMatch(dir, golden);
      });
    }
  });
}
