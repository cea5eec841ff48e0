// What a user of the package gets, from `npm pack` to a running server, on a machine with no
// compiler: the tarball is installed into a scratch project with a PATH holding only node, npm
// and sh, plus decoy python3/make/cc/gcc/g++/c++ that record being called. Then the installed
// `herrscher-state --version`, a `serve` + `call`, and the client entry imported on its own
// (it must load no native addon). Also what the tarball holds: every module it ships is loaded by
// the CLI or the client entry, and every source map carries the sources it names.
//
// Slow (an npm install, ~10–30 s), so not in `npm test`'s glob: `npm run test:install`, which
// .ci/run runs. Dependencies come from the npm cache when it has them (`--prefer-offline`).
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { REPO } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 300_000;
const DECOYS = ['python3', 'python', 'make', 'cc', 'gcc', 'g++', 'c++', 'clang'];

/** The first `name` on the caller's PATH, resolved through symlinks. */
function which(name: string): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(dir, name);
    if (dir && existsSync(p)) return realpathSync(p);
  }
  throw new Error(`${name} is not on PATH`);
}

/** A bin dir with node, npm and sh, and decoys that log their call to `calls` and fail. */
function toolchainFreeBin(root: string, calls: string): string {
  const bin = path.join(root, 'bin');
  mkdirSync(bin);
  symlinkSync(process.execPath, path.join(bin, 'node'));
  symlinkSync(which('npm'), path.join(bin, 'npm'));
  symlinkSync(which('sh'), path.join(bin, 'sh'));
  for (const d of DECOYS) {
    writeFileSync(path.join(bin, d), `#!/bin/sh\necho "${d} $*" >> '${calls}'\nexit 1\n`);
    chmodSync(path.join(bin, d), 0o755);
  }
  return bin;
}

/** Relative `import … from './x.js'` / `export … from` targets of an ES module. */
function relativeImports(file: string): string[] {
  const src = readFileSync(file, 'utf8');
  const imported = [...src.matchAll(/(?:^|[;\s])(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]/g)];
  // A file loaded by URL: the writer thread's worker, from the bundle, where the bin's
  // import.meta is __hsImportMeta.
  const workers = [...src.matchAll(/new URL\(\s*['"](\.{1,2}\/[^'"]+\.js)['"]\s*,\s*(?:import\.meta|__hsImportMeta)\.url\s*\)/g)];
  // A file read beside the script: the bin's bundle (path.join(__dirname, 'cli-main.js'), CommonJS;
  // esbuild writes the path module under a name of its own).
  const beside = [...src.matchAll(/\.join\(\s*__dirname\s*,\s*['"]([^'"/]+\.js)['"]\s*\)/g)].map((m) => [m[0], `./${m[1] as string}`]);
  return [...imported, ...workers, ...beside].map((m) => path.resolve(path.dirname(file), m[1] as string));
}

test('the packed tarball installs without a compiler and serves', { timeout: TIMEOUT }, async () => {
  const root = tempDir();
  const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { name: string; version: string };
  // --ignore-scripts: prepack would rebuild dist/ under tests running beside this one; the build is up to date.
  const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', root], { cwd: REPO, encoding: 'utf8' })) as [
    { filename: string; files: { path: string }[] },
  ];
  const tarball = path.join(root, packed[0].filename);

  const project = path.join(root, 'project');
  mkdirSync(project);
  // allowScripts: let fs-ext-extra-prebuilt's install script run, to prove it needs no compiler either.
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'scratch', private: true, allowScripts: { 'fs-ext-extra-prebuilt': true } }));
  const calls = path.join(root, 'compiler-calls.log');
  const env = {
    HOME: process.env.HOME,
    PATH: toolchainFreeBin(root, calls),
    TMPDIR: root,
    npm_config_cache: process.env.npm_config_cache ?? path.join(process.env.HOME ?? root, '.npm'),
  } as NodeJS.ProcessEnv;
  const install = spawnSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: project, env, encoding: 'utf8' });
  assert.equal(install.status, 0, `npm install failed:\n${install.stdout}\n${install.stderr}`);
  assert.equal(existsSync(calls) ? readFileSync(calls, 'utf8') : '', '', 'no compiler or python was called');
  assert.equal(existsSync(path.join(project, 'node_modules/fs-ext-extra-prebuilt/build')), false, 'no native build');

  const bin = path.join(project, 'node_modules/.bin/herrscher-state');
  const version = spawnSync(bin, ['--version'], { cwd: project, env, encoding: 'utf8' });
  assert.deepEqual({ status: version.status, stdout: version.stdout }, { status: 0, stdout: `${pkg.version}\n` }, version.stderr);

  const socket = path.join(root, 's.sock');
  const server = spawn(bin, ['serve', '--socket', socket, '--state', path.join(root, 'state', 'state.json'), '--log-format', 'json'], { cwd: project, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let serverErr = '';
  server.stderr.on('data', (c: Buffer) => (serverErr += c.toString()));
  const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
  try {
    for (let i = 0; i < 200 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 50));
    const listed = spawnSync(bin, ['call', 'session/list', '--socket', socket], { cwd: project, env, encoding: 'utf8' });
    assert.equal(listed.status, 0, `call failed: ${String(listed.stderr)}\nserver: ${serverErr}`);
    assert.deepEqual(JSON.parse(String(listed.stdout)), { sessions: [] });
  } finally {
    server.kill('SIGTERM');
  }
  assert.equal(await exited, 0, serverErr);
  // The V8 code cache ships and fits the bundle installed (the node that packed it runs it here).
  const serving = serverErr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg?: string; codeCache?: string })
    .find((r) => r.msg === 'serving');
  assert.equal(serving?.codeCache, 'accepted', serverErr);

  // The client entry on its own: what an editor extension imports. No native addon may load.
  const probe = path.join(project, 'probe.mjs');
  writeFileSync(
    probe,
    `const loaded = []; const dlopen = process.dlopen; process.dlopen = (m, f, ...r) => { loaded.push(f); return dlopen.call(process, m, f, ...r); };\n` +
      `const c = await import('${pkg.name}'); console.log(JSON.stringify({ exports: Object.keys(c).sort(), loaded }));\n`,
  );
  const client = spawnSync(process.execPath, [probe], { cwd: project, env, encoding: 'utf8' });
  assert.equal(client.status, 0, client.stderr);
  const got = JSON.parse(client.stdout) as { exports: string[]; loaded: string[] };
  assert.ok(got.exports.includes('connect') && got.exports.includes('spawn'), got.exports.join(','));
  assert.deepEqual(got.loaded, [], 'importing the client loads no native addon');

  // Every shipped module is reachable from the bin or the "." export.
  const installed = path.join(project, 'node_modules', pkg.name);
  const shipped = packed[0].files.map((f) => f.path).filter((p) => p.endsWith('.js'));
  const reached = new Set<string>();
  const walk = (file: string): void => {
    if (reached.has(file)) return;
    reached.add(file);
    for (const dep of relativeImports(file)) walk(dep);
  };
  walk(path.join(installed, 'dist/src/cli.js'));
  walk(path.join(installed, 'dist/src/client/index.js'));
  const unreached = shipped.filter((p) => !reached.has(path.join(installed, p)));
  assert.deepEqual(unreached, [], 'modules shipped that nothing loads');

  // No script runs at install or build time for a user of the tarball: `prepare` is a build for
  // developers (npm runs it on git installs and `npm install` in a clone, never needed here).
  const manifest = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const lifecycle = Object.keys(manifest.scripts ?? {}).filter((k) => ['prepare', 'preinstall', 'install', 'postinstall'].includes(k));
  assert.deepEqual(lifecycle, [], 'the published package runs no lifecycle script at install');

  // Every relative link in the shipped markdown (README, docs/) names a file or folder the tarball
  // holds: the README is the manual an installed package carries.
  const shippedPaths = packed[0].files.map((f) => f.path);
  const broken: string[] = [];
  for (const md of shippedPaths.filter((p) => p.endsWith('.md'))) {
    for (const m of readFileSync(path.join(installed, md), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = (m[1] as string).split('#')[0] as string;
      if (!target || /^[a-z]+:/i.test(target)) continue;
      const rel = path.posix.normalize(path.posix.join(path.posix.dirname(md), target)).replace(/\/$/, '');
      if (!shippedPaths.some((p) => p === rel || p.startsWith(`${rel}/`))) broken.push(`${md} → ${target}`);
    }
  }
  assert.deepEqual(broken, [], 'links in the shipped markdown to files the tarball does not hold');

  // Every source map names only sources it carries (the TypeScript is not shipped).
  for (const p of packed[0].files.map((f) => f.path).filter((f) => f.endsWith('.map'))) {
    const map = JSON.parse(readFileSync(path.join(installed, p), 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] };
    const missing = map.sources.filter((s, i) => typeof map.sourcesContent?.[i] !== 'string' && !existsSync(path.resolve(path.dirname(path.join(installed, p)), s)));
    assert.deepEqual(missing, [], `${p} names sources that are neither shipped nor inlined`);
  }
});
