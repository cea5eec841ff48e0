// bench/bounds.ts's copies of the bundle (bench/harness/bound-builds.ts): each still applies to the
// bundle this run built, parses, and does what its name says; a bundle that no longer holds what
// a copy replaces fails here instead of measuring something else. Only correctness; the rates are
// bench/bounds.ts's.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import vm from 'node:vm';
import type { BoundBuild } from '../../bench/harness/bound-builds.js';
import { boundBundle, BOUND_BUILDS, bundleOf, writeBoundCopy } from '../../bench/harness/bound-builds.js';
import { connectClient } from '../../bench/harness/rpc.js';
import { startServer } from '../../bench/harness/servers.js';
import { CLI, REPO } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const bundle = readFileSync(bundleOf(CLI), 'utf8');
const build = (name: string): BoundBuild => {
  const b = BOUND_BUILDS.find((x) => x.name === name);
  assert.ok(b, `no bound build named ${name}`);
  return b;
};

test('every bound build applies to the bundle built now, changes it and parses', () => {
  for (const b of BOUND_BUILDS) {
    const copy = boundBundle(bundle, b);
    if (b.patches.length === 0) assert.equal(copy, bundle, b.name);
    else assert.notEqual(copy, bundle, b.name);
    for (const p of b.patches) assert.ok(copy.includes(p.replace), `${b.name}: ${p.replace.slice(0, 40)}`);
    // Compiled as src/cli.ts compiles the bundle, a node:vm script (not run): a syntax error
    // throws here, in this process, instead of in a `node --check` child per build.
    assert.doesNotThrow(() => new vm.Script(copy, { filename: `${b.name}.cjs` }), b.name);
  }
});

test('a bundle without the text a build replaces, or with it twice, refuses that build by name', () => {
  const noValidation = build('no validation');
  const find = (noValidation.patches[0] as { find: string }).find;
  assert.throws(() => boundBundle(bundle.replace(find, ''), noValidation), /bound build "no validation": the bundle holds no .*update bench\/harness\/bound-builds\.ts/);
  assert.throws(() => boundBundle(`${bundle}\n${find}`, noValidation), /the bundle holds more than one/);
});

test('a build whose replacement uses a name the bundle no longer declares is refused', () => {
  const minimal = build('minimal store');
  // Every `writer` that is not a property renamed, as esbuild renames one on a clash.
  const renamed = bundle.replace(/(?<![\w$.])writer(?![\w$])/g, 'writer2');
  assert.notEqual(renamed, bundle);
  assert.throws(() => boundBundle(renamed, minimal), /no longer declares writer;/);
});

test('the minimal-store copy answers an append by writing its line to the bound folder, seq counting from 0', async (t) => {
  const dir = tempDir('hs-bound-run-');
  // Inside the repo, as bench/bounds.ts puts it, so it resolves node_modules as the build does.
  const folder = path.join(REPO, 'dist', `bound-test-${process.pid}`);
  const cli = writeBoundCopy(CLI, folder, boundBundle(bundle, build('minimal store')));
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const proc = await startServer('bound-test', path.join(dir, 'state/state.json'), path.join(dir, 's.sock'), 'write', { cli, env: { HS_BOUND_DIR: dir } });
  t.after(() => proc.stop());
  const client = await connectClient(proc.socket);
  t.after(() => client.close());
  const entry = { ts: '2026-07-26T00:00:05Z', role: 'user', text: 'a <b>' };
  assert.deepEqual(await client.transcriptAppend({ name: 'x', entry }), { seq: 0 });
  assert.deepEqual(await client.transcriptAppend({ name: 'x', entry }), { seq: 1 });
  const line = '{"ts":"2026-07-26T00:00:05Z","role":"user","text":"a \\u003cb\\u003e"}\n';
  assert.equal(readFileSync(path.join(dir, 'x.jsonl'), 'utf8'), line + line);
});
