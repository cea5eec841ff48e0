// watchStateDir tells a removed state dir from the server's own replacements of state.json: each
// replacement renames a name in the dir (an event), after which the watch looks at the dir and
// finds it in place; the dir's removal is reported once.
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { watchStateDir } from '../../src/server/state-dir-watch.js';
import { tempDir } from '../helpers/temp-dir.js';

test('replacements of state.json are looked at and not reported; the removal of the dir is, once', { timeout: 30_000 }, async (t) => {
  const dir = tempDir('hs-dirwatch-');
  // The watch holds the process open with nothing of its own (a server has its sockets): this does.
  const alive = setInterval(() => undefined, 60_000);
  t.after(() => clearInterval(alive));
  const reports: string[] = [];
  let gone!: () => void;
  const removed = new Promise<void>((resolve) => (gone = resolve));
  let looked: (() => void) | undefined;
  const watch = watchStateDir(
    dir,
    (why) => {
      reports.push(why);
      gone();
    },
    (err) => assert.fail(`no watch: ${String(err)}`),
    () => looked?.(),
  );
  t.after(() => watch.close());

  const lookedAgain = new Promise<void>((resolve) => (looked = resolve));
  for (let i = 0; i < 20; i++) {
    writeFileSync(path.join(dir, '.state.json.tmp'), `{"i":${i}}`);
    renameSync(path.join(dir, '.state.json.tmp'), path.join(dir, 'state.json'));
  }
  await Promise.race([lookedAgain, removed]);
  assert.deepEqual(reports, [], 'a replacement is no removal');

  rmSync(dir, { recursive: true, force: true });
  await removed;
  assert.equal(reports.length, 1);
  assert.match(reports[0]!, /was removed/);
});

/** A watch whose `gone` reports resolve `reported`; the process kept alive while it runs. */
function watching(t: { after(fn: () => unknown): void }, dir: string, pollMs?: number) {
  const alive = setInterval(() => undefined, 60_000);
  t.after(() => clearInterval(alive));
  const reports: string[] = [];
  let done!: () => void;
  const reported = new Promise<void>((resolve) => (done = resolve));
  const watch = watchStateDir(
    dir,
    (why) => {
      reports.push(why);
      done();
    },
    (err) => assert.fail(`no watch: ${String(err)}`),
    undefined,
    pollMs,
  );
  t.after(() => watch.close());
  return { reports, reported, watch };
}

test('a dir that cannot be read when the watch begins is reported at once, after the call returns', { timeout: 30_000 }, async (t) => {
  const dir = path.join(tempDir('hs-dirwatch-'), 'never-made');
  const w = watching(t, dir);
  assert.deepEqual(w.reports, [], 'not inside watchStateDir');
  await w.reported;
  assert.equal(w.reports.length, 1);
  assert.match(w.reports[0]!, /cannot be read: ENOENT/);
  w.watch.close();
});

test('a dir replaced by another one at its path is reported as replaced', { timeout: 30_000 }, async (t) => {
  const root = tempDir('hs-dirwatch-');
  const dir = path.join(root, 'state');
  mkdirSync(dir);
  // A short poll: a rename of the dir itself is not an event of the dir's own names.
  const w = watching(t, dir, 20);
  renameSync(dir, path.join(root, 'old'));
  mkdirSync(dir);
  await w.reported;
  assert.deepEqual(w.reports, [`the state dir ${dir} was replaced by another directory`]);
});

test('a dir whose parent became a file is reported as removed', { timeout: 30_000 }, async (t) => {
  const root = tempDir('hs-dirwatch-');
  const dir = path.join(root, 'parent', 'state');
  mkdirSync(dir, { recursive: true });
  const w = watching(t, dir, 20);
  renameSync(path.join(root, 'parent'), path.join(root, 'moved'));
  writeFileSync(path.join(root, 'parent'), 'a file now');
  await w.reported;
  assert.deepEqual(w.reports, [`the state dir ${dir} was removed`]);
});

test('a closed watch reports nothing: the removal after close is seen by a second watch only', { timeout: 30_000 }, async (t) => {
  const dir = tempDir('hs-dirwatch-');
  const first = watching(t, dir, 20);
  first.watch.close();
  first.watch.close();
  const second = watching(t, dir, 20);
  rmSync(dir, { recursive: true, force: true });
  await second.reported;
  // The second watch's check ran after the removal; the first, closed, made none (its poll is cleared).
  assert.deepEqual(first.reports, []);
  assert.deepEqual(second.reports, [`the state dir ${dir} was removed`]);
});
