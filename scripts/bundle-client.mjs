// The client's CommonJS build, for `require('herrscher-state')` and a TypeScript extension compiled
// as CommonJS: dist/cjs/index.cjs, one file bundled by esbuild from src/client/index.ts (its
// dependencies stay imports of the installed packages), and beside it a copy of the client's
// declarations under a package.json that says "commonjs", so TypeScript's node16/nodenext
// resolution types a require() as CommonJS, and dist/types-node10/ for the top-level `types`. The ES module entry is tsc's dist/src/client/.
import { build } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'dist/cjs');
rmSync(out, { recursive: true, force: true });
rmSync(path.join(root, 'dist/types-node10'), { recursive: true, force: true });

await build({
  absWorkingDir: root,
  entryPoints: ['src/client/index.ts'],
  outfile: 'dist/cjs/index.cjs',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  packages: 'external',
  // CommonJS has no import.meta: spawn() finds the CLI from __filename instead (src/client/cli-path.ts).
  define: { 'import.meta.url': 'undefined' },
  sourcemap: 'linked',
  sourcesContent: true,
  logLevel: 'warning',
});

/** Relative module specifiers a declaration file imports (`from './x.js'`, `import('./x.js')`). */
function relativeSpecifiers(src) {
  return [...src.matchAll(/(?:from\s*|import\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]);
}

/** Copies the declarations the client's index reaches into `to`, with their layout (dist/src/… → to/src/…). */
function copyDeclarations(to, rewrite = (text) => text) {
  const copied = new Set();
  const copy = (dts) => {
    if (copied.has(dts)) return;
    copied.add(dts);
    const text = readFileSync(dts, 'utf8');
    const target = path.join(to, path.relative(path.join(root, 'dist'), dts));
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, rewrite(text));
    for (const spec of relativeSpecifiers(text)) {
      const next = path.resolve(path.dirname(dts), spec.replace(/\.js$/, '.d.ts'));
      if (!existsSync(next)) throw new Error(`bundle-client: ${path.relative(root, dts)} imports ${spec}, which has no declaration file`);
      copy(next);
    }
  };
  copy(path.join(root, 'dist/src/client/index.d.ts'));
  writeFileSync(path.join(to, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
}

copyDeclarations(out);
// moduleResolution node10 (TypeScript's `module: commonjs` default) reads no `exports`, and
// vscode-jsonrpc declares its types only there: this copy names its files by path instead.
const JSONRPC_FILES = { 'vscode-jsonrpc': 'vscode-jsonrpc/lib/common/api', 'vscode-jsonrpc/node': 'vscode-jsonrpc/lib/node/main' };
copyDeclarations(path.join(root, 'dist/types-node10'), (text) =>
  text.replace(/(['"])(vscode-jsonrpc(?:\/node)?)\1/g, (_m, q, spec) => `${q}${JSONRPC_FILES[spec]}${q}`),
);
