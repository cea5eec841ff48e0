// `npm run test:mutation` (StrykerJS, docs/testing.md "Mutation testing") runs on demand only, so
// nothing else would notice its config naming a file that was renamed or removed: a run would
// then mutate or test less than the page says, silently. This checks the names, not the score.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (rel: string): string => readFileSync(path.join(root, rel), 'utf8');

interface StrykerConfig {
  testRunner: string;
  plugins: string[];
  ignorers: string[];
  mutate: string[];
  tap: { testFiles: string[]; nodeArgs: string[] };
  concurrency: number;
}
const config = JSON.parse(read('stryker.config.json')) as StrykerConfig;
const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string>; devDependencies: Record<string, string> };

test('every file the mutation run mutates or runs exists, and each mutated file is named in docs/testing.md', () => {
  assert.ok(config.mutate.length > 0 && config.tap.testFiles.length > 0);
  const missing = [...config.mutate, ...config.tap.testFiles].filter((f) => !existsSync(path.join(root, f)));
  assert.deepEqual(missing, []);
  const doc = read('docs/testing.md');
  assert.deepEqual(config.mutate.filter((f) => !doc.includes(`\`${f}\``)), [], 'docs/testing.md names every mutated file');
  assert.deepEqual(config.tap.testFiles.filter((f) => !f.startsWith('test/') || !f.endsWith('.test.ts')), []);
});

test('each ignorer the config names is a plugin it loads, and the plugin files exist', async () => {
  const local = config.plugins.filter((p) => p.startsWith('./'));
  assert.deepEqual(local.filter((p) => !existsSync(path.join(root, p))), []);
  const declared: string[] = [];
  for (const p of local) {
    const mod = (await import(path.join(root, p))) as { strykerPlugins: { kind: string; name: string }[] };
    declared.push(...mod.strykerPlugins.filter((d) => d.kind === 'Ignore').map((d) => d.name));
  }
  assert.ok(config.ignorers.length > 0);
  assert.deepEqual(config.ignorers.filter((i) => !declared.includes(i)), []);
});

test('the mutation run is npm run test:mutation, on the tap runner with tsx, and not part of npm test', () => {
  assert.match(pkg.scripts['test:mutation'] ?? '', /\bstryker run\b/);
  assert.doesNotMatch(pkg.scripts.test ?? '', /stryker/);
  assert.equal(config.testRunner, 'tap');
  assert.deepEqual(config.tap.nodeArgs, ['--import', 'tsx']);
  assert.ok(config.concurrency >= 1 && config.concurrency <= 2, 'a 2-core machine shared with others');
  for (const dep of ['@stryker-mutator/core', '@stryker-mutator/tap-runner']) assert.ok(pkg.devDependencies[dep], `${dep} is a devDependency`);
});
