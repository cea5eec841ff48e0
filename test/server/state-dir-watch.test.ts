// watchStateDir tells a removed state dir from the server's own replacements of state.json: each
// replacement renames a name in the dir (an event), after which the watch looks at the dir and
// finds it in place; the dir's removal is reported once.
import assert from 'node:assert/strict';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
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
