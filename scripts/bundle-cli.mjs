// Bundles the CLI into one file, straight from src/ (esbuild compiles the TypeScript): Node
// resolves and compiles ~200 modules (zod, pino, vscode-jsonrpc…) at start, which made
// spawn-to-first-reply twice a bare vscode-jsonrpc server's. One file loads in about half the
// time (measured: `--version` 0.31 s → 0.16 s). The library entry (dist/src/client/, from tsc)
// stays unbundled for importers. Runs after tsc.
// dist/src/cli-main.js is src/cli-main.ts and all it imports as one script, a function expression
// that the bin (dist/src/cli.js, tsc's own output of src/cli.ts) compiles through node:vm with the
// V8 code cache written next (scripts/write-code-cache.mjs): a script, because node:vm takes a
// code cache for scripts only (modules need a Node 20 flag), and a function, so that the bin hands
// it what a module has and a script lacks (require, __filename, import.meta).
// The writer thread's worker is its own CommonJS script, dist/src/writer-worker.cjs: a Worker
// started from an ES module also sets up Node's ES module loader in its thread, ~5 ms of CPU at
// every server's first write (measured: worker start and first replace 40 → 34 ms).
// The bin itself, dist/src/cli.js (src/cli.ts), is built here too, as a CommonJS script: an ES
// module entry costs node its ES module loader at every start (~8 ms of CPU, docs/performance.md,
// "Every start"). Node takes a .js file for CommonJS when the package.json nearest to it says so:
// dist/src/package.json does, and every folder of tsc's ES modules below it (the library, what
// test fixtures import) gets one saying "module" again.
// External: fs-ext-extra-prebuilt (a native addon that finds its prebuilt binary beside its own
// files).
// Names are not minified (only whitespace and syntax), so a stack trace or a log's `err.type` names
// our functions and classes (a class that refers to itself is named `_Name` by the bundler), and
// the source map points them into src/. Not keepNames, which gets
// the same by wrapping every function the code creates in a defineProperty call: ~2 µs of the
// server's ~28 µs of CPU per append (docs/performance.md, "CPU per append").
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

/**
 * zod re-exports its ~40 translations of error messages as `z.locales`, which we never use (its
 * English ones are imported on their own): 300 KB of a 1 MB bundle that every start of the CLI
 * parsed. Each zod import of that index gets an empty module instead.
 */
const withoutZodLocales = {
  name: 'without-zod-locales',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: 'zod-locales', namespace: 'without-zod-locales' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'without-zod-locales' }, () => ({ contents: 'export {};', loader: 'js' }));
  },
};

/**
 * sonic-boom and thread-stream (pino's) call node's `assert(value, message)` once each, on a path
 * no start takes, yet `require('assert')` at their top loaded node's assert module (and its error
 * formatting) at every start of `serve`: ~1 ms of CPU before the first reply. Their `assert` is
 * this function instead, which loads node's only when the value is falsy, so the failure is the
 * same AssertionError with the same message.
 */
const assertOnFailure = {
  name: 'assert-on-failure',
  setup(b) {
    b.onResolve({ filter: /^assert$/ }, (args) =>
      /[\\/]node_modules[\\/](sonic-boom|thread-stream)[\\/]/.test(args.importer) ? { path: 'assert', namespace: 'assert-on-failure' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'assert-on-failure' }, () => ({
      contents: "module.exports = function assert(value, message) { if (!value) require('node:assert')(value, message); };",
      loader: 'js',
    }));
  },
};

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  external: ['fs-ext-extra-prebuilt'],
  plugins: [withoutZodLocales, assertOnFailure],
  minifyWhitespace: true, // less to parse at every start
  minifySyntax: true,
  sourcemap: 'linked',
  sourcesContent: true, // the map stands alone: it needs none of the files it names
  logLevel: 'warning',
};

await build({
  ...common,
  entryPoints: { 'cli-main': 'src/cli-main.ts' },
  outdir: 'dist/src',
  format: 'cjs',
  // A script has no import.meta: the bin passes its own (same folder, so every URL resolved
  // against it, the writer worker's, package.json's, means the same).
  define: { 'import.meta': '__hsImportMeta', HS_WRITER_WORKER: JSON.stringify('./writer-worker.cjs') },
  // The whole bundle is one function expression: running the script returns it, and the bin calls
  // it. esbuild's source map counts these lines. Its "use strict" opens the body.
  banner: { js: '(function (require, __filename, __dirname, __hsImportMeta) {' },
  footer: { js: '})' },
});

await build({
  ...common,
  // The writer thread's script: the bundle starts its worker from dist/src/writer-worker.cjs
  // (src/store/writer-thread-start.ts finds it beside the file its import.meta names, by the name
  // defined for the CLI bundle above).
  entryPoints: { 'writer-worker': 'src/store/writer-worker.ts' },
  outdir: 'dist/src',
  outExtension: { '.js': '.cjs' },
  format: 'cjs',
});

// The bin, not minified (a few dozen lines), with its map; it imports node's own modules only.
await build({
  ...common,
  entryPoints: { cli: 'src/cli.ts' },
  outdir: 'dist/src',
  format: 'cjs',
  minifyWhitespace: false,
  minifySyntax: false,
});

// The module scopes: dist/src is CommonJS for the bin, its folders (tsc's output) ES modules.
const DIST_SRC = 'dist/src';
writeFileSync(path.join(DIST_SRC, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
for (const e of readdirSync(DIST_SRC, { withFileTypes: true })) {
  if (e.isDirectory()) writeFileSync(path.join(DIST_SRC, e.name, 'package.json'), `${JSON.stringify({ type: 'module' })}\n`);
}
