// Every Go golden replayed over the wire, once per framing: the results Go returned, then, after
// an orderly shutdown + exit, the exact bytes Go left on disk. LSP framing against the spawned
// CLI (`serve --stdio`: what a host runs, exit code and stdout purity included), NDJSON against
// the in-process server's stdio-like connection.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import type { Ctx } from '../helpers/cli.js';
import { serveStdio, shutdownAndExit } from '../helpers/cli.js';
import { assertFilesMatch, assertResult, expandOp, loadGoldens } from '../helpers/goldens.js';
import { startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';
import type { Framing, Message, RawClient } from '../helpers/wire.js';

const ok = (reply: Message, what: string): unknown => {
  assert.equal(reply.error, undefined, `${what} answered an error: ${JSON.stringify(reply.error)}`);
  assert.ok('result' in reply, `${what} has a result`);
  return reply.result;
};

/** A host's connection to a server on `dir`, and the orderly end (shutdown, exit, exit code 0, stdout only frames). */
async function host(t: Ctx, dir: string, framing: Framing): Promise<{ rpc: RawClient; end(): Promise<void> }> {
  if (framing === 'lsp') {
    const server = serveStdio(t, statePathIn(dir), framing);
    return {
      rpc: server.rpc,
      end: async () => assert.deepEqual(await shutdownAndExit(server), { code: 0, signal: null }, `exit after shutdown; stderr:\n${server.stderr()}`),
    };
  }
  const srv = await startServer(t, { dir, lifecycleOwner: 'stdio' });
  const rpc = srv.stdio(framing);
  return {
    rpc,
    end: async () => {
      assert.equal((await rpc.request('shutdown')).result, null);
      rpc.notify('exit');
      assert.equal(await srv.exited, 0, 'exit after shutdown');
    },
  };
}

for (const framing of ['lsp', 'ndjson'] as Framing[]) {
  describe(`goldens over stdio with ${framing} framing${framing === 'lsp' ? ' (spawned)' : ' (in process)'}`, () => {
    for (const golden of loadGoldens()) {
      test(`golden ${golden.name} over ${framing}: ${golden.about}`, { timeout: 60_000 }, async (t) => {
        const dir = tempDir();
        if (golden.stateFile !== undefined) writeFileSync(statePathIn(dir), golden.stateFile);
        const server = await host(t, dir, framing);
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
        await server.end();
        assert.deepEqual(server.rpc.garbage, [], 'stdout held only frames');
        assertFilesMatch(dir, golden);
      });
    }
  });
}
