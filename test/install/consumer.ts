// The package as an editor extension or a bridge consumes it, from `npm pack`: a scratch project
// installs the tarball (and @types/node) and then, with this repo's TypeScript, esbuild and webpack:
// - typechecks one strict consumer under module commonjs/node10, node16, nodenext and bundler, as
//   CommonJS and as an ES module where the mode has both, with and without esModuleInterop and
//   skipLibCheck, on the oldest TypeScript the package supports, this repo's and the newest, with
//   the calls' types checked (a wrong param must fail), and walks the published declarations: they
//   import no package but Node's own (no zod, no vscode-jsonrpc);
// - require()s and imports the entry under plain Node and calls spawn() with no `cli`, which must
//   find the CLI itself; `herrscher-state/cli` resolves to it;
// - bundles a TypeScript extension that uses spawn() as CommonJS with esbuild and with webpack and
//   runs the bundles;
// - bundles `connect` + one call with esbuild, minified, prints its size and holds it to 100 kB,
//   with neither zod nor pino nor a native addon in it.
// Slow (an npm install), so in `npm run test:install` (CI), not `npm test`.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { before, test } from 'node:test';
import type * as Esbuild from 'esbuild';
import type { Stats as WebpackStats } from 'webpack';
import type webpackFunction from 'webpack';
import { REPO } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 300_000;
/** The bound on a bundle of `connect` + one call (minified, as an extension ships it). */
const CLIENT_BUNDLE_MAX_BYTES = 100_000;
/**
 * The TypeScript versions a consumer may typecheck the client with: the oldest the package
 * supports (docs/install.md), this repository's own, and the newest release when this was written.
 * TypeScript 7 removed moduleResolution node10 and esModuleInterop false: its cells are the ones it
 * still accepts.
 */
const OLDEST_TS = '5.0.4';
const NEWEST_TS = '7.0.2';
const repoRequire = createRequire(path.join(REPO, 'package.json'));

let project = '';

/** Writes `files` (relative to the project) and returns the project folder. */
function write(files: Record<string, string>): void {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(project, rel)), { recursive: true });
    writeFileSync(path.join(project, rel), text);
  }
}

const env = (): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR });

/** Runs a consumer script with plain Node in the project; its stdout is one JSON line. */
function runNode(args: string[]): unknown {
  const r = spawnSync(process.execPath, args, { cwd: project, env: env(), encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `node ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() as string);
}

before(
  () => {
    const root = tempDir();
    // --ignore-scripts: prepack would rebuild dist/ under tests running beside this one; the build is up to date.
    const packed = JSON.parse(execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', root], { cwd: REPO, encoding: 'utf8' })) as [{ filename: string }];
    project = path.join(root, 'consumer');
    mkdirSync(project);
    // No "type": CommonJS, as an extension's package.json is by default.
    const types = (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies['@types/node'];
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
    const install = spawnSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', path.join(root, packed[0].filename), `@types/node@${types}`, `ts-oldest@npm:typescript@${OLDEST_TS}`, `ts-newest@npm:typescript@${NEWEST_TS}`], {
      cwd: project,
      encoding: 'utf8',
    });
    assert.equal(install.status, 0, `npm install failed:\n${install.stdout}\n${install.stderr}`);
  },
  { timeout: TIMEOUT },
);

// What an extension writes: the calls' params and results are typed from the contract. The ts-
// expect-error directive proves they are (an `any` from an unresolved import would make it unused, an
// error).
const CONSUMER_TS = `import { connect, spawn, ErrorCodes, ResponseError, SocketError, StartError } from 'herrscher-state';
import type { StateClient, Session } from 'herrscher-state';
export async function run(state: string): Promise<string> {
  const server = spawn({ state, args: ['--no-socket'] });
  const { session } = await server.sessionAdd({ session: { name: 'ext' } });
  const s: Session = session;
  // @ts-${'expect-error'} the name is a string: a number must not typecheck
  const bad = () => server.sessionAdd({ session: { name: 5 } });
  const code: number = ErrorCodes.UnknownSession;
  const c: (o: { socket: string }) => Promise<StateClient> = connect;
  const why = (err: unknown): string => (err instanceof StartError ? \`\${err.exitCode}: \${err.stderr.join(' / ')}\` : String(err));
  await server.close();
  return [s.name, code, typeof bad, typeof c, ResponseError.name, SocketError.name, why].join(',');
}
`;


interface Cell {
  name: string;
  module: string;
  moduleResolution?: string;
  esModuleInterop?: boolean;
  skipLibCheck: boolean;
}

/** Every cell: module commonjs/node10, node16, nodenext and bundler × esModuleInterop × skipLibCheck, all strict. */
function cells(removedInTs7: boolean): Cell[] {
  const modes = removedInTs7
    ? [{ module: 'commonjs' }, { module: 'node16', moduleResolution: 'node16' }, { module: 'nodenext', moduleResolution: 'nodenext' }, { module: 'esnext', moduleResolution: 'bundler' }]
    : [{ module: 'commonjs', moduleResolution: 'node10' }, { module: 'node16', moduleResolution: 'node16' }, { module: 'nodenext', moduleResolution: 'nodenext' }, { module: 'esnext', moduleResolution: 'bundler' }];
  return modes.flatMap((m) =>
    (removedInTs7 ? [undefined] : [false, true]).flatMap((esModuleInterop) =>
      [false, true].map((skipLibCheck) => ({ ...m, esModuleInterop, skipLibCheck, name: `${m.module}/${m.moduleResolution ?? 'default'} interop=${esModuleInterop ?? 'n/a'} skipLibCheck=${skipLibCheck}` })),
    ),
  );
}

/** Writes one cell's project (tsconfig + consumer) and returns its folder. */
function writeCell(tag: string, cell: Cell): string {
  const dir = `types-${tag}-${cell.name.replace(/[^a-z0-9]+/gi, '-')}`;
  // node16/nodenext: the .ts file is CommonJS (no "type" in package.json), the .mts an ES module.
  const files = cell.module === 'node16' || cell.module === 'nodenext' ? ['consumer.ts', 'consumer.mts'] : ['consumer.ts'];
  const { name: _name, ...options } = cell;
  write({
    [`${dir}/tsconfig.json`]: JSON.stringify({ compilerOptions: { ...options, target: 'es2022', strict: true, noEmit: true, types: ['node'], typeRoots: ['../node_modules/@types'] }, files }),
    ...Object.fromEntries(files.map((f) => [`${dir}/${f}`, CONSUMER_TS])),
  });
  return dir;
}

// One process per TypeScript version typechecks every cell through the compiler API (a source
// file parsed once serves every cell): what `tsc -p` reports, except that a cell without
// skipLibCheck reports no error inside @types/node or the default libs, which no option here
// changes. It lists the packages each program loaded: only this one and Node's types.
const MATRIX_RUNNER = `const ts = require(process.argv[2]);
const path = require('node:path');
const cache = new Map();
const results = [];
for (const dir of JSON.parse(process.argv[3])) {
  const parsed = ts.getParsedCommandLineOfConfigFile(path.resolve(dir, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, ' ')); } });
  const host = ts.createCompilerHost(parsed.options);
  const get = host.getSourceFile.bind(host);
  host.getSourceFile = (f, lang, ...rest) => {
    const key = [f, JSON.stringify(lang), parsed.options.module, parsed.options.moduleResolution].join('\\0');
    if (!cache.has(key)) cache.set(key, get(f, lang, ...rest));
    return cache.get(key);
  };
  const program = ts.createProgram(parsed.fileNames, parsed.options, host);
  const checked = (f) => !/[\\\\/]node_modules[\\\\/]@types[\\\\/]/.test(f.fileName) && !(program.isSourceFileDefaultLibrary(f));
  const files = program.getSourceFiles();
  const diagnostics = [...parsed.errors, ...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics(),
    ...files.filter(checked).flatMap((f) => [...program.getSyntacticDiagnostics(f), ...program.getSemanticDiagnostics(f)])];
  results.push({
    errors: diagnostics.map((d) => (d.file ? path.relative(dir, d.file.fileName) + ': ' : '') + 'TS' + d.code + ' ' + ts.flattenDiagnosticMessageText(d.messageText, ' ')),
    packages: [...new Set(files.filter((f) => !program.isSourceFileDefaultLibrary(f)).map((f) => (f.fileName.match(/node_modules[\\\\/]((?:@[^\\\\/]+[\\\\/])?[^\\\\/]+)/) || [])[1]).filter(Boolean))].sort(),
  });
}
console.log(JSON.stringify({ version: ts.version, results }));
`;

for (const [tag, typescript] of [['oldest', 'ts-oldest'], ['repo', path.join(REPO, 'node_modules/typescript')]] as const) {
  test(`a strict consumer typechecks in every module mode, with and without esModuleInterop and skipLibCheck (TypeScript ${tag})`, { timeout: TIMEOUT }, () => {
    const matrix = cells(false);
    const dirs = matrix.map((c) => writeCell(tag, c));
    write({ 'ts-matrix.cjs': MATRIX_RUNNER });
    const r = spawnSync(process.execPath, ['ts-matrix.cjs', typescript === 'ts-oldest' ? path.join(project, 'node_modules/ts-oldest') : typescript, JSON.stringify(dirs)], { cwd: project, encoding: 'utf8', timeout: TIMEOUT });
    assert.equal(r.status, 0, `ts-matrix failed:\n${r.stdout}\n${r.stderr}`);
    const out = JSON.parse(r.stdout.trim()) as { version: string; results: { errors: string[]; packages: string[] }[] };
    if (tag === 'oldest') assert.equal(out.version, OLDEST_TS);
    console.log(`# TypeScript ${out.version}: ${matrix.length} cells`);
    matrix.forEach((cell, i) => {
      assert.deepEqual(out.results[i]?.errors, [], `TypeScript ${out.version}, ${cell.name}`);
      // Neither zod nor vscode-jsonrpc is part of a consumer's program: the declarations stand alone.
      assert.deepEqual(out.results[i]?.packages, ['@types/node', 'herrscher-state', 'undici-types'], `TypeScript ${out.version}, ${cell.name}: packages loaded`);
    });
  });
}

test(`a strict consumer typechecks in every module mode TypeScript ${NEWEST_TS} still has, with and without skipLibCheck`, { timeout: TIMEOUT }, () => {
  const tsc = path.join(project, 'node_modules/ts-newest/bin/tsc');
  for (const cell of cells(true)) {
    const dir = writeCell('newest', cell);
    const r = spawnSync(process.execPath, [tsc, '-p', path.join(project, dir, 'tsconfig.json')], { cwd: project, encoding: 'utf8', timeout: TIMEOUT });
    assert.equal(r.status, 0, `tsc ${NEWEST_TS} (${cell.name}) failed:\n${r.stdout}\n${r.stderr}`);
  }
  const version = spawnSync(process.execPath, [tsc, '--version'], { encoding: 'utf8' }).stdout;
  assert.match(version, new RegExp(NEWEST_TS.replace(/\./g, '\\.')));
});

test('the published declarations import no package but Node\'s own', () => {
  const pkg = path.join(project, 'node_modules/herrscher-state');
  const seen = new Set<string>();
  const walk = (dts: string): void => {
    if (seen.has(dts)) return;
    seen.add(dts);
    const text = readFileSync(dts, 'utf8');
    for (const [, spec = ''] of text.matchAll(/(?:from\s*|import\(\s*)['"]([^'"]+)['"]/g)) {
      if (spec.startsWith('node:')) continue;
      assert.ok(spec.startsWith('.'), `${path.relative(pkg, dts)} imports ${spec}`);
      walk(path.resolve(path.dirname(dts), spec.replace(/\.js$/, '.d.ts')));
    }
  };
  const manifest = JSON.parse(readFileSync(path.join(pkg, 'package.json'), 'utf8')) as { types: string; exports: { '.': { import: { types: string }; require: { types: string } } } };
  for (const entry of [manifest.types, manifest.exports['.'].import.types, manifest.exports['.'].require.types]) walk(path.join(pkg, entry));
  assert.ok(seen.size > 5, `walked ${seen.size} declaration files`);
});

/** A consumer script body (CommonJS or ESM) that spawns the server with no `cli` and adds a session. */
const probeBody = (load: string): string => `${load}
const os = require('node:os'), fs = require('node:fs'), path = require('node:path');
(async () => {
  const state = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hs-consumer-')), 'state.json');
  const server = hs.spawn({ state, args: ['--no-socket'] });
  const { session } = await server.sessionAdd({ session: { name: 'probe' } });
  await server.close();
  const loaded = Object.keys(require.cache).filter((k) => /node_modules[\\\\/](zod|pino)[\\\\/]/.test(k));
  console.log(JSON.stringify({ name: session.name, exit: await server.exited, loaded, cli: require.resolve('herrscher-state/cli') }));
})().catch((err) => { console.error(err); process.exit(1); });
`;

test('require() and import of the entry spawn the server with no cli given', { timeout: TIMEOUT }, () => {
  write({
    'require.cjs': probeBody("const hs = require('herrscher-state');"),
    'import.mjs': `import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\nconst hs = await import('herrscher-state');\n${probeBody('')}`,
  });
  const cli = path.join(project, 'node_modules/herrscher-state/dist/src/cli.js');
  for (const script of ['require.cjs', 'import.mjs']) {
    assert.deepEqual(runNode([script]), { name: 'probe', exit: 0, loaded: [], cli }, script);
  }
});

const EXTENSION_TS = `import { spawn } from 'herrscher-state';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
export async function activate(): Promise<string> {
  const state = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hs-ext-')), 'state.json');
  const server = spawn({ state, args: ['--no-socket'] });
  const { session } = await server.sessionAdd({ session: { name: 'bundled' } });
  await server.close();
  return session.name + ':' + String(await server.exited);
}
`;
const RUN_EXTENSION = (bundle: string): string =>
  `require(${JSON.stringify(bundle)}).activate().then((r) => console.log(JSON.stringify(r)), (e) => { console.error(e); process.exit(1); })`;

test('an esbuild CommonJS bundle of an extension that calls spawn() runs', { timeout: TIMEOUT }, async () => {
  write({ 'ext/extension.ts': EXTENSION_TS });
  const esbuild = repoRequire('esbuild') as typeof Esbuild;
  const out = path.join(project, 'out-esbuild/extension.js');
  const result = await esbuild.build({
    absWorkingDir: project,
    entryPoints: ['ext/extension.ts'],
    outfile: out,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'silent',
  });
  assert.deepEqual(result.warnings.map((w) => w.text), [], 'the bundle builds without a warning');
  assert.equal(runNode(['-e', RUN_EXTENSION(out)]), 'bundled:0');
});

// An extension whose state.json is broken: what it can tell its user, from the StartError.
const BROKEN_EXTENSION_TS = `import { spawn, StartError } from 'herrscher-state';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
export async function activate(): Promise<string> {
  const state = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hs-ext-')), 'state.json');
  fs.writeFileSync(state, '{not json');
  const server = spawn({ state, args: ['--no-socket'] });
  try {
    await server.sessionList();
    return 'answered';
  } catch (err) {
    if (!(err instanceof StartError)) throw err;
    return \`exit \${err.exitCode}: \${err.stderr[err.stderr.length - 1]}\`;
  } finally {
    await server.close();
  }
}
`;

test('an esbuild CommonJS bundle of an extension spawning a server on a broken state.json gets its exit code and words', { timeout: TIMEOUT }, async () => {
  write({ 'ext/broken.ts': BROKEN_EXTENSION_TS });
  const esbuild = repoRequire('esbuild') as typeof Esbuild;
  const out = path.join(project, 'out-esbuild/broken.js');
  await esbuild.build({ absWorkingDir: project, entryPoints: ['ext/broken.ts'], outfile: out, bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'silent' });
  const said = runNode(['-e', RUN_EXTENSION(out)]);
  assert.match(String(said), /^exit 1: herrscher-state: cannot open the state .*state\.json: state\.json: invalid JSON.*; fix .* or move it away/);
});

test('a webpack CommonJS bundle of an extension that calls spawn() runs', { timeout: TIMEOUT }, async () => {
  write({ 'ext/extension.js': EXTENSION_TS.replace(': Promise<string>', '') });
  const webpack = repoRequire('webpack') as typeof webpackFunction;
  const outDir = path.join(project, 'out-webpack');
  const stats = await new Promise<WebpackStats>((resolve, reject) => {
    webpack(
      {
        mode: 'production',
        target: 'node20',
        context: project,
        entry: './ext/extension.js',
        output: { path: outDir, filename: 'extension.js', library: { type: 'commonjs2' } },
        resolve: { modules: [path.join(project, 'node_modules')] },
        optimization: { minimize: false },
      },
      (err, s) => (err || !s ? reject(err ?? new Error('webpack: no stats')) : resolve(s)),
    );
  });
  assert.equal(stats.hasErrors(), false, stats.toString('errors-only'));
  assert.equal(runNode(['-e', RUN_EXTENSION(path.join(outDir, 'extension.js'))]), 'bundled:0');
});

test('a bundle of connect and one call is small: no zod, no pino, no native addon', { timeout: TIMEOUT }, async () => {
  write({ 'small/client.ts': `import { connect } from 'herrscher-state';\nvoid connect().then((c) => c.sessionList()).then((r) => console.log(r.sessions.length));\n` });
  const esbuild = repoRequire('esbuild') as typeof Esbuild;
  const sizes: Record<string, number> = {};
  for (const format of ['cjs', 'esm'] as const) {
    const out = path.join(project, `out-small/client.${format}.js`);
    const result = await esbuild.build({
      absWorkingDir: project,
      entryPoints: ['small/client.ts'],
      outfile: out,
      bundle: true,
      minify: true,
      platform: 'node',
      format,
      target: 'node20',
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs);
    assert.deepEqual(inputs.filter((i) => /node_modules\/(zod|pino|fs-ext-extra-prebuilt)\/|\.node$/.test(i)), [], `${format}: neither zod nor pino nor native code`);
    sizes[format] = statSync(out).size;
  }
  // A size is not a time: a bound on it is a fact of the build, the same on every machine.
  console.log(`# client bundle (connect + one call, esbuild --minify): cjs ${sizes.cjs} B, esm ${sizes.esm} B; bound ${CLIENT_BUNDLE_MAX_BYTES} B`);
  for (const [format, size] of Object.entries(sizes)) assert.ok(size <= CLIENT_BUNDLE_MAX_BYTES, `${format} bundle is ${size} B, over ${CLIENT_BUNDLE_MAX_BYTES}`);
  // The size the README states is this one, to the kB.
  const stated = /`connect` plus one call bundles to (\d+) kB minified/.exec(readFileSync(path.join(REPO, 'README.md'), 'utf8'));
  assert.ok(stated, 'README.md states the bundle size');
  assert.equal(Number(stated[1]), Math.round((sizes.cjs ?? 0) / 1000), `README.md says ${stated[1]} kB; the CommonJS bundle is ${sizes.cjs} B: update README.md`);
});
