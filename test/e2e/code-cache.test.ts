// The bin (src/cli.ts) starts the CLI bundle from the V8 code cache the build wrote, and starts it
// the same without one that fits: another node version or V8 flags (V8 rejects it), a cache made
// for another bundle (V8 checks only the length: the bin checks a hash), none at all. Each start
// answers `initialize` and says in its `serving` log line how it compiled. What the cache saves
// is a measurement (bench/stdio.bench.ts, spawn.first-reply), not a test.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import path from 'node:path';
import test from 'node:test';
import type { Ctx } from '../helpers/cli.js';
import { CLI, privateRuntimeDir, REPO, runCli, waitForStderr } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';
import { RawClient } from '../helpers/wire.js';

const TIMEOUT = 30_000;
const DIST = path.join(REPO, 'dist/src');

/** `serve --stdio` from `cli`: its `initialize` reply's serverInfo name and the `codeCache` of its `serving` line. */
async function start(t: Ctx, opts: { cli?: string; nodeArgs?: string[] } = {}): Promise<{ server: string; codeCache: unknown }> {
  // Without NODE_OPTIONS: V8 flags there (a developer's --max-old-space-size) would reject the cache.
  const env = { ...process.env, NODE_OPTIONS: undefined, HERRSCHER_STATE_DIR: undefined, HERRSCHER_STATE_SOCKET: undefined, XDG_RUNTIME_DIR: privateRuntimeDir() };
  const state = path.join(tempDir(), 'state.json');
  const c = runCli(t, ['serve', '--stdio', '--no-socket', '--state', state, '--log-level', 'info', '--log-format', 'json'], { ...opts, env, collectStdout: false });
  const rpc = new RawClient(c.child.stdout as NodeJS.ReadableStream, c.child.stdin as NodeJS.WritableStream, 'lsp');
  const reply = await rpc.request('initialize', { clientInfo: { name: 'code-cache-test' } });
  const serving = JSON.parse((await waitForStderr(c, /^\{.*"msg":"serving".*\}$/m))[0]) as { codeCache?: unknown };
  c.child.stdin?.end();
  assert.deepEqual(await c.exited, { code: 0, signal: null }, c.stderr());
  return { server: (reply.result as { serverInfo: { name: string } }).serverInfo.name, codeCache: serving.codeCache };
}

/** A copy of the built bin, bundle and worker beside the repo's package.json and node_modules, with the cache as `cache` says. */
function copyOfBuild(cache: 'as built' | 'none', editBundle?: (source: string) => string): string {
  const root = tempDir();
  const src = path.join(root, 'dist/src');
  mkdirSync(src, { recursive: true });
  copyFileSync(path.join(REPO, 'package.json'), path.join(root, 'package.json'));
  symlinkSync(path.join(REPO, 'node_modules'), path.join(root, 'node_modules'));
  // package.json: dist/src's, which makes the bin a CommonJS script (scripts/bundle-cli.mjs).
  for (const f of ['cli.js', 'package.json', 'cli-main.js.map', 'writer-worker.cjs']) copyFileSync(path.join(DIST, f), path.join(src, f));
  const bundle = readFileSync(path.join(DIST, 'cli-main.js'), 'utf8');
  writeFileSync(path.join(src, 'cli-main.js'), editBundle ? editBundle(bundle) : bundle);
  if (cache === 'as built') copyFileSync(path.join(DIST, 'cli-main.code-cache'), path.join(src, 'cli-main.code-cache'));
  return path.join(src, 'cli.js');
}

test('the built CLI starts from its code cache', { timeout: TIMEOUT }, async (t) => {
  assert.deepEqual(await start(t), { server: 'herrscher-state', codeCache: 'accepted' });
});

test('node started with a V8 flag rejects the cache, and the CLI compiles its bundle and serves', { timeout: TIMEOUT }, async (t) => {
  assert.deepEqual(await start(t, { nodeArgs: ['--stack-trace-limit=25'] }), { server: 'herrscher-state', codeCache: 'rejected' });
});

test('a cache made for another bundle of the same length is not used (V8 would run its code)', { timeout: TIMEOUT }, async (t) => {
  const cli = copyOfBuild('as built', (source) => {
    const edited = source.replace('"use strict"', "'use strict'");
    assert.ok(edited !== source && edited.length === source.length);
    return edited;
  });
  assert.deepEqual(await start(t, { cli }), { server: 'herrscher-state', codeCache: 'stale' });
});

test('without a cache file the CLI compiles its bundle and serves', { timeout: TIMEOUT }, async (t) => {
  assert.deepEqual(await start(t, { cli: copyOfBuild('none') }), { server: 'herrscher-state', codeCache: 'absent' });
});

test('the copy with the cache as built uses it: the cases above differ only in what they name', { timeout: TIMEOUT }, async (t) => {
  assert.deepEqual(await start(t, { cli: copyOfBuild('as built') }), { server: 'herrscher-state', codeCache: 'accepted' });
});

/** 4 KiB of zeros in the middle of V8's data (past the 8-byte header of two CRC-32s), as a bad disk block would leave it. */
function damagePayload(cli: string): string {
  const cache = path.join(path.dirname(cli), 'cli-main.code-cache');
  const bytes = readFileSync(cache);
  assert.ok(bytes.length > 8 + 64 * 1024 + 4096);
  bytes.fill(0, 8 + 64 * 1024, 8 + 64 * 1024 + 4096);
  writeFileSync(cache, bytes);
  return cache;
}

/** Whether the cache's V8 data matches its checksum (read independently of the bin). */
const intact = (cache: string): boolean => {
  const bytes = readFileSync(cache);
  return bytes.length > 8 && bytes.readUInt32BE(4) === crc32(bytes.subarray(8));
};

test('a cache whose V8 data is damaged is not handed to V8: --version works, and the cache is written again for the next start', { timeout: TIMEOUT }, async (t) => {
  const cli = copyOfBuild('as built');
  const cache = damagePayload(cli);
  assert.equal(intact(cache), false);
  const got = spawnSync(process.execPath, [cli, '--version'], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: undefined } });
  assert.deepEqual({ status: got.status, signal: got.signal, stderr: got.stderr }, { status: 0, signal: null, stderr: '' });
  const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string };
  assert.equal(got.stdout, `${pkg.version}\n`);
  assert.equal(intact(cache), true, 'written again at exit');
  assert.deepEqual(await start(t, { cli }), { server: 'herrscher-state', codeCache: 'accepted' });
});

test('serve with a damaged cache compiles its bundle, serves, says `damaged`, and the next start uses the cache it wrote', { timeout: TIMEOUT }, async (t) => {
  const cli = copyOfBuild('as built');
  const cache = damagePayload(cli);
  assert.deepEqual(await start(t, { cli }), { server: 'herrscher-state', codeCache: 'damaged' });
  assert.equal(intact(cache), true, 'written again at exit');
  assert.deepEqual(await start(t, { cli }), { server: 'herrscher-state', codeCache: 'accepted' });
});

test('a missing bundle is one line naming it and the build, exit 1', { timeout: TIMEOUT }, async () => {
  const root = tempDir();
  copyFileSync(CLI, path.join(root, 'cli.js'));
  copyFileSync(path.join(DIST, 'package.json'), path.join(root, 'package.json'));
  const c = runCli(undefined, ['--version'], { cli: path.join(root, 'cli.js') });
  c.child.stdin?.end();
  assert.deepEqual(await c.exited, { code: 1, signal: null });
  assert.match(c.stderr(), /^herrscher-state: cannot read the CLI bundle .*cli-main\.js: ENOENT.*\n\(in a clone, npm run build makes it\)\n$/);
});

test('the bin starts as a CommonJS script: node never sets up its ES module loader', { timeout: TIMEOUT }, () => {
  // An ES module entry (the bin was one) loads node's ES module loader before the first line runs:
  // ~8 ms of CPU at every start of any command. A preload reports what node loaded, at exit.
  const preload = path.join(tempDir(), 'loaded.cjs');
  writeFileSync(preload, "process.on('exit', () => process.stderr.write(JSON.stringify(process.moduleLoadList)));\n");
  const got = spawnSync(process.execPath, ['--require', preload, CLI, '--version'], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: undefined } });
  assert.equal(got.status, 0, got.stderr);
  const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string };
  assert.equal(got.stdout, `${pkg.version}\n`);
  const loaded = JSON.parse(got.stderr) as string[];
  assert.ok(loaded.includes('NativeModule internal/modules/cjs/loader'), 'the list names the CommonJS loader');
  assert.deepEqual(loaded.filter((m) => m.startsWith('NativeModule internal/modules/esm/') && m !== 'NativeModule internal/modules/esm/utils'), []);
});
