// Bundles the CLI into one file, straight from src/ (esbuild compiles the TypeScript): Node
// resolves and compiles ~200 modules (zod, pino, vscode-jsonrpc…) at start, which made
// spawn-to-first-reply twice a bare vscode-jsonrpc server's. One file loads in about half the
// time (measured: `--version` 0.31 s → 0.16 s). The library entry (dist/src/client/, from tsc)
// stays unbundled for importers. Runs after tsc, whose dist/src/cli.js it replaces.
// The writer thread's worker is its second entry, dist/src/writer-worker.js.
// External: fs-ext-extra-prebuilt (a native addon that finds its prebuilt binary beside its own
// files).
// Names are not minified (only whitespace and syntax), so a stack trace or a log's `err.type` names
// our functions and classes (a class that refers to itself is named `_Name` by the bundler), and
// the source map points them into src/. Not keepNames, which gets
// the same by wrapping every function the code creates in a defineProperty call: ~2 µs of the
// server's ~28 µs of CPU per append (docs/performance.md, "CPU per append").
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

await build({
  // The writer thread's module is a second entry beside the CLI: the bundle starts its worker from
  // dist/src/writer-worker.js (src/store/writer-thread.ts finds it beside itself).
  entryPoints: { cli: 'src/cli.ts', 'writer-worker': 'src/store/writer-worker.ts' },
  outdir: 'dist/src',
  allowOverwrite: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['fs-ext-extra-prebuilt'],
  plugins: [withoutZodLocales],
  // Bundled CommonJS dependencies call require() and read __filename (write-file-atomic names
  // its temp files with it); an ES module has neither of its own.
  banner: {
    js:
      "import { createRequire as __hsCreateRequire } from 'node:module'; import { fileURLToPath as __hsFileURLToPath } from 'node:url';" +
      ' const require = __hsCreateRequire(import.meta.url); const __filename = __hsFileURLToPath(import.meta.url);',
  },
  minifyWhitespace: true, // less to parse at every start
  minifySyntax: true,
  sourcemap: 'linked',
  sourcesContent: true, // the map stands alone: it needs none of the files it names
  logLevel: 'warning',
});
