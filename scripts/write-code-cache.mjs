// Writes dist/src/cli-main.code-cache, the V8 code cache the bin (src/cli.ts) starts the CLI
// bundle from, in the bin's format (its writeCodeCache). Run by the build after the
// bundle. The cache is made the way a host starts the server, once: `serve --stdio` is run through
// the bin and answers `initialize`, then, as the process exits, V8 serializes every function
// compiled so far (a cache made right after compiling would hold only the outer code: V8 compiles
// a function's body when it first runs). Then a second start must report the cache `accepted`
// in its `serving` log line, else the build fails: a cache V8 would reject at every start is a
// silent loss of the start-up time it exists for.
//
// V8 accepts a cache only with the flags it was made with. `serve` changes two heap flags as it
// starts (src/commands/serve-heap.ts), so they are put back to V8's defaults before the cache
// is written (the check above catches a flag added there and not here); NODE_OPTIONS is not passed
// on, so the cache fits a plain `node`.
//
// usage: node scripts/write-code-cache.mjs           (from the repo root, after the bundle)
//        node scripts/write-code-cache.mjs --child OUT BIN SERVE-ARGS…   (the serving run, internal)
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import v8 from 'node:v8';
// tsc's output, built before this runs: V8's defaults for the flags serve sets on itself.
import { V8_DEFAULT_FLAGS as V8_DEFAULTS } from '../dist/src/commands/heap-settings.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(root, 'dist/src/cli.js');
const CACHE = path.join(root, 'dist/src/cli-main.code-cache');
/** The signal that makes the serving run write the cache, and the line it says so with. */
const CACHE_NOW = 'SIGUSR2';
const CACHE_WRITTEN = 'write-code-cache: written';

if (process.argv[2] === '--child') {
  const [out, bin, ...args] = process.argv.slice(3);
  // The bundle reads its command line from process.argv, as when node runs the bin itself.
  process.argv = [process.argv[0], bin, ...args];
  await import(pathToFileURL(bin).href);
  const start = globalThis[Symbol.for('herrscher-state.cli-start')];
  // Asked by the parent once the initialize reply is out: the cache holds what a start compiles
  // up to its first reply, not the stop's code (compiled at the stop, when it runs).
  process.on(CACHE_NOW, () => {
    for (const flag of V8_DEFAULTS) v8.setFlagsFromString(flag);
    start.writeCodeCache(out);
    process.stderr.write(`${CACHE_WRITTEN}\n`);
  });
} else {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hs-code-cache-'));
  try {
    rmSync(CACHE, { force: true });
    const serveArgs = (name) => ['serve', '--stdio', '--state', path.join(tmp, name, 'state.json'), '--socket', path.join(tmp, `${name}.sock`), '--log-level', 'info', '--log-format', 'json'];
    const made = path.join(tmp, 'cache');
    await firstReply([path.join(root, 'scripts/write-code-cache.mjs'), '--child', made, BIN, ...serveArgs('make')], { cacheAtReply: true });
    writeFileSync(CACHE, readFileSync(made));
    const check = await firstReply([BIN, ...serveArgs('check')]);
    const serving = check
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .find((r) => r.msg === 'serving');
    if (serving?.codeCache !== 'accepted') {
      rmSync(CACHE, { force: true });
      throw new Error(`the code cache just made was not used by the next start (codeCache: ${serving?.codeCache}); its log:\n${check}`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Runs node with `args` (a `serve --stdio`), asks `initialize`, ends stdin; resolves with its
 * stderr once it exited 0. With cacheAtReply, first has the serving run write the cache and waits
 * until it has.
 */
function firstReply(args, { cacheAtReply = false } = {}) {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  delete env.HERRSCHER_STATE_SOCKET;
  delete env.HERRSCHER_STATE_DIR;
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let asked = false;
  child.stdout.on('data', (c) => {
    stdout += c;
    if (!stdout.includes('"id":1') || asked) return;
    asked = true;
    if (cacheAtReply) child.kill(CACHE_NOW);
    else child.stdin.end();
  });
  child.stderr.on('data', (c) => {
    stderr += c;
    if (cacheAtReply && stderr.includes(CACHE_WRITTEN)) child.stdin.end();
  });
  child.stdin.on('error', () => undefined);
  const message = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { clientInfo: { name: 'write-code-cache' } } });
  child.stdin.write(`Content-Length: ${Buffer.byteLength(message)}\r\n\r\n${message}`);
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve, reject) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0 && stdout.includes('"result"')) resolve(stderr);
      else reject(new Error(`node ${args.join(' ')} ended with ${code ?? signal} before answering initialize:\n${stderr}`));
    }),
  );
}
