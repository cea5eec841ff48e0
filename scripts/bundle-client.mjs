// The client's CommonJS build, for `require('herrscher-state')` and a TypeScript extension compiled
// as CommonJS: dist/cjs/index.cjs, one file bundled by esbuild from src/client/index.ts (its
// dependencies stay imports of the installed packages), and beside it a copy of the client's
// declarations under a package.json that says "commonjs", so TypeScript's node16/nodenext
// resolution types a require() as CommonJS; the top-level `types` (node10) names the same copy.
// The ES module entry is tsc's dist/src/client/. The declarations the client's index reaches
// must import no package but Node's own (zod's or vscode-jsonrpc's types would tie a consumer's
// typecheck to theirs): the copy fails the build when one does.
import { build } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'dist/cjs');
rmSync(out, { recursive: true, force: true });

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

/** Module specifiers a declaration file imports (`from './x.js'`, `import('./x.js')`, `from 'zod'`). */
function specifiers(src) {
  return [...src.matchAll(/(?:from\s*|import\(\s*)['"]([^'"]+)['"]/g)].map((m) => m[1]);
}

/** Copies the declarations the client's index reaches into `to`, with their layout (dist/src/… → to/src/…). */
function copyDeclarations(to) {
  const copied = new Set();
  const copy = (dts) => {
    if (copied.has(dts)) return;
    copied.add(dts);
    const text = readFileSync(dts, 'utf8');
    const target = path.join(to, path.relative(path.join(root, 'dist'), dts));
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, text);
    for (const spec of specifiers(text)) {
      if (spec.startsWith('node:')) continue;
      if (!spec.startsWith('.')) throw new Error(`bundle-client: ${path.relative(root, dts)} imports the package ${spec}: the client's declarations must stand alone`);
      const next = path.resolve(path.dirname(dts), spec.replace(/\.js$/, '.d.ts'));
      if (!existsSync(next)) throw new Error(`bundle-client: ${path.relative(root, dts)} imports ${spec}, which has no declaration file`);
      copy(next);
    }
  };
  copy(path.join(root, 'dist/src/client/index.d.ts'));
  writeFileSync(path.join(to, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);
}

copyDeclarations(out);
