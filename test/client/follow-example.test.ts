// examples/follow-transcript.mjs, the README's subscribe example, run as a user runs it: it
// waits for a server that is not there yet, prints each appended entry, and rides a restart.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { REPO } from '../helpers/cli.js';
import { startServer } from '../helpers/server.js';
import { tempDir } from '../helpers/temp-dir.js';

const ENTRY = (text: string) => ({ ts: '2026-01-01T00:00:00Z', role: 'user', text });

test("README.md shows the example's code as it is", () => {
  const code = readFileSync(path.join(REPO, 'examples/follow-transcript.mjs'), 'utf8');
  const body = code.slice(code.indexOf("import { connect }")).trim();
  assert.ok(readFileSync(path.join(REPO, 'README.md'), 'utf8').includes(`\`\`\`js\n${body}\n\`\`\``), 'README.md lacks the example as in examples/follow-transcript.mjs');
});

test('the follow-transcript example prints each appended entry and rides a server restart', { timeout: 120_000 }, async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 's.sock');
  const child = spawn(process.execPath, [path.join(REPO, 'examples/follow-transcript.mjs'), socket, 'main'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => child.kill());
  const out = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const err = createInterface({ input: child.stderr })[Symbol.asyncIterator]();
  const next = async (it: AsyncIterator<string>, what: RegExp): Promise<string> => {
    for (;;) {
      const r = await it.next();
      assert.ok(!r.done, `the example ended before ${what}`);
      if (what.test(r.value)) return r.value;
    }
  };
  // Started before the server: it waits for it.
  let srv = await startServer(t, { dir, socket });
  let c = await srv.client();
  await c.sessionAdd({ session: { name: 'main' } });
  await next(err, /^following main$/);
  await c.transcriptAppend({ name: 'main', entry: ENTRY('first') });
  assert.equal(await next(out, /./), 'main #0 user: first');
  await srv.close();
  await next(err, /^connection: lost$/);
  srv = await startServer(t, { dir, socket });
  c = await srv.client();
  await c.transcriptAppend({ name: 'main', entry: ENTRY('after the restart') });
  assert.equal(await next(out, /./), 'main #1 user: after the restart');
});
