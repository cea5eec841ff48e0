// What a host's first reply waits for: node modules `serve` needs only later are not loaded
// before it (each costs every start CPU before that reply): node's rimraf (fs.rm), assert (which
// pino's sonic-boom and thread-stream load only to fail with: scripts/bundle-cli.mjs), and v8 and
// perf_hooks, which the heap settings load once the first reply is out. A preload records what
// node had loaded when the first frame went to stdout, and again at exit.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';
import { RawClient } from '../helpers/wire.js';

const TIMEOUT = 30_000;

const PRELOAD = `
const write = process.stdout.write;
let first = true;
process.stdout.write = function (...args) {
  if (first) {
    first = false;
    process.stderr.write('AT-FIRST-REPLY ' + JSON.stringify(process.moduleLoadList) + '\\n');
  }
  return write.apply(this, args);
};
process.on('exit', () => process.stderr.write('AT-EXIT ' + JSON.stringify(process.moduleLoadList) + '\\n'));
`;

const LATER = ['NativeModule internal/fs/rimraf', 'NativeModule perf_hooks', 'NativeModule v8', 'NativeModule assert'];

test('serve --stdio answers its first request before loading node modules it needs only later', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const preload = path.join(dir, 'loaded.cjs');
  writeFileSync(preload, PRELOAD);
  const c = runCli(t, ['serve', '--stdio', '--state', path.join(dir, 'state.json'), '--socket', path.join(dir, 's.sock')], { nodeArgs: ['--require', preload], collectStdout: false });
  const rpc = new RawClient(c.child.stdout as NodeJS.ReadableStream, c.child.stdin as NodeJS.WritableStream, 'lsp');
  const reply = await rpc.request('initialize', {});
  assert.equal(reply.error, undefined);
  // Once the heap settings are applied after the reply, a write still works (its Worker starts held).
  assert.equal((await rpc.request('session/add', { session: { name: 'main' } })).error, undefined);
  c.child.stdin?.end();
  assert.deepEqual(await c.exited, { code: 0, signal: null });
  const list = (tag: string): string[] => {
    const line = c.stderr().split('\n').find((l) => l.startsWith(`${tag} `));
    assert.ok(line, `${tag} line in stderr:\n${c.stderr()}`);
    return JSON.parse(line.slice(tag.length + 1)) as string[];
  };
  const atReply = list('AT-FIRST-REPLY');
  assert.ok(atReply.includes('NativeModule net'), 'the list is node’s module list');
  assert.deepEqual(LATER.filter((m) => atReply.includes(m)), [], 'loaded before the first reply');
  const atExit = list('AT-EXIT');
  assert.ok(atExit.includes('NativeModule v8') && atExit.includes('NativeModule perf_hooks'), 'the heap settings were applied after the reply');
});
