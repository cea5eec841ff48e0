#!/usr/bin/env node
// The `herrscher-state` bin: starts the CLI, dist/src/cli-main.js (src/cli-main.ts and everything
// it imports, bundled by scripts/bundle-cli.mjs into one script that evaluates to a function),
// compiled from the V8 code cache the build wrote beside it. Compiling the 0.7 MB bundle and then
// each function it runs was most of what a start spent beyond a bare vscode-jsonrpc server
// (docs/performance.md, "Spawn to first reply"); the cache holds the bytecode of the whole path
// to `serve`'s first reply, so a start deserializes it instead. Node 22's module compile cache
// does the same for modules, Node 20 has none, hence a script through node:vm.
//
// V8 accepts a cache only from its own version with the same flags (`node --max-old-space-size=…`
// differs); it rejects any other and the bundle is compiled as it would be without one. It checks
// the source only by its length, so the cache carries the CRC-32 of the bundle it was made from:
// one built for other code of the same length would run that other code. A checksum, not a
// cryptographic hash: it tells a rebuilt bundle from the one the cache was made for (whoever can
// write the cache can write the bundle too), and costs ~0.3 ms of a start where SHA-256 cost ~1.1.
// V8 (Node 20's) does not check its own data either: 4 KiB of zeros in it crashed every start with
// SIGSEGV. So the cache also carries the CRC-32 of V8's data, and a cache whose data does not
// match is not handed to V8 (`damaged`): the bundle is compiled from source and the cache written
// again as the process exits (src/commands/code-cache.ts).
// How the start went is `codeCache` in serve's `serving` log line (src/commands/code-cache.ts).
//
// Imports only node's own modules: this file is loaded before the cache can help.
//
// It runs as a CommonJS script, not an ES module: the build writes it with esbuild as CommonJS
// (scripts/bundle-cli.mjs) and marks dist/src a CommonJS scope (dist/src/package.json), each
// folder of tsc's ES modules below it a module scope again. An ES module entry costs every start
// node's ES module loader (its set-up, fs/promises to read the file, a module facade per built-in
// imported): ~8 ms of CPU per start of any command (docs/performance.md, "Every start"). Hence
// `__filename` here and an import.meta made for the bundle, which reads only its `url`.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import vm from 'node:vm';
import { crc32 } from 'node:zlib';

// Read before anything else: a parent that dies during the start re-parents this process, and a
// ppid read later would be init's (--exit-with-parent, src/commands/parent-watch.ts).
const parentPid = process.ppid;

/** Where the cache file came out (src/commands/code-cache.ts reads it, scripts/write-code-cache.mjs too). */
type CodeCacheUse = 'accepted' | 'rejected' | 'stale' | 'damaged' | 'absent' | 'unreadable';
/** What the bundle's wrapper takes (its banner in scripts/bundle-cli.mjs). */
type Main = (require: NodeJS.Require, filename: string, dirname: string, importMeta: ImportMeta) => void;

/**
 * The cache file: the CRC-32 of the bundle it was made from, then the CRC-32 of V8's data (each
 * 4 bytes, big-endian), then V8's data. Defined here alone: the build and a rewrite write it
 * through `writeCodeCache` on the start record below.
 */
const HEADER_BYTES = 8;

const file = path.join(__dirname, 'cli-main.js');
let bundle: Buffer;
try {
  bundle = readFileSync(file);
} catch (err) {
  process.stderr.write(`herrscher-state: cannot read the CLI bundle ${file}: ${(err as Error).message}\n(in a clone, npm run build makes it)\n`);
  process.exit(1);
}

const cacheFile = file.replace(/\.js$/, '.code-cache');
let use: CodeCacheUse = 'absent';
let cachedData: Buffer | undefined;
try {
  const stored = readFileSync(cacheFile);
  if (stored.length < HEADER_BYTES) use = 'damaged';
  else if (stored.readUInt32BE(0) !== crc32(bundle)) use = 'stale';
  else if (stored.readUInt32BE(4) !== crc32(stored.subarray(HEADER_BYTES))) use = 'damaged';
  else cachedData = stored.subarray(HEADER_BYTES);
} catch (err) {
  // Without it the bundle compiles as it would with none: slower, never wrong.
  if ((err as NodeJS.ErrnoException).code !== 'ENOENT') use = 'unreadable';
}

// No importModuleDynamically: the bundle has no import() (esbuild turns those of bundled modules into calls).
const script = new vm.Script(bundle.toString('utf8'), { filename: file, ...(cachedData ? { cachedData } : {}) });
if (cachedData) use = script.cachedDataRejected === true ? 'rejected' : 'accepted';
/**
 * Writes the cache of what this process has compiled so far to `out` (the bin's cache file by
 * default), through a temporary file and a rename, so a start never reads half a cache.
 */
function writeCodeCache(out: string = cacheFile): void {
  const data = script.createCachedData();
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32BE(crc32(bundle), 0);
  header.writeUInt32BE(crc32(data), 4);
  const tmp = `${out}.${process.pid}.tmp`;
  writeFileSync(tmp, Buffer.concat([header, data]));
  renameSync(tmp, out);
}
(globalThis as Record<symbol, unknown>)[Symbol.for('herrscher-state.cli-start')] = { codeCache: use, script, parentPid, writeCodeCache };
// The bin's own require resolves from this folder, the bundle's: the same lookups.
const importMeta = { url: pathToFileURL(__filename).href } as ImportMeta;
(script.runInThisContext() as Main)(require, file, path.dirname(file), importMeta);
