// Every Go golden replayed over the wire, once per framing: the results Go returned, then, after
// an orderly shutdown + exit, the exact bytes Go left on disk. Both framings against the
// in-process server's stdio-like connection (the Service `serve --stdio` runs), except two
// goldens over lsp, which run against the spawned CLI instead (`serve --stdio`: what a host runs,
// the bundle, real pipes, exit code and stdout purity included; the same Service, so the
// in-process lsp run of those two would prove nothing more): the one that pipelines 1 000
// appends of 5 000 bytes through the pipe and the one that calls the most methods. A spawn costs
// ~0.25 s of CPU; the other goldens through a process would prove again what these two and
// lifecycle.test.ts prove.
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

/** The goldens replayed over lsp against the spawned CLI, not in process (see the top of the file). */
const SPAWNED = ['compaction-1000x5000', 'mutations'];

type Host = 'spawned' | 'in process';

/** A host's connection to a server on `dir`, and the orderly end (shutdown, exit, exit code 0, stdout only frames). */
async function host(t: Ctx, dir: string, framing: Framing, where: Host): Promise<{ rpc: RawClient; end(): Promise<void> }> {
  if (where === 'spawned') {
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

const runs: [Framing, Host][] = [['lsp', 'in process'], ['ndjson', 'in process'], ['lsp', 'spawned']];
test('the goldens replayed against the spawned CLI exist', () => {
  assert.deepEqual(SPAWNED.filter((name) => !loadGoldens().some((g) => g.name === name)), []);
});
for (const [framing, where] of runs) {
  describe(`goldens over stdio with ${framing} framing (${where})`, () => {
    // Each golden once per framing: over lsp, the SPAWNED ones in the spawned run only.
    const spawnedLsp = (name: string): boolean => framing === 'lsp' && SPAWNED.includes(name);
    for (const golden of loadGoldens().filter((g) => (where === 'spawned') === spawnedLsp(g.name))) {
      test(`golden ${golden.name} over ${framing}, ${where}: ${golden.about}`, { timeout: 60_000 }, async (t) => {
        const dir = tempDir();
        if (golden.stateFile !== undefined) writeFileSync(statePathIn(dir), golden.stateFile);
        const server = await host(t, dir, framing, where);
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
