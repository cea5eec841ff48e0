// What running the tests leaves in a clone is ignored by git: the Python client's bytecode cache
// (its tests import it), the dev state dir, the build.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../helpers/cli.js';

test('git ignores clients/python/__pycache__/, .state-dev/ and dist/', { skip: !existsSync(path.join(REPO, '.git')) && 'not a git checkout' }, () => {
  const paths = ['clients/python/__pycache__/herrscher_state.cpython-311.pyc', '.state-dev/state.json', 'dist/src/cli.js'];
  const r = spawnSync('git', ['check-ignore', '--no-index', ...paths], { cwd: REPO, encoding: 'utf8' });
  assert.deepEqual(r.stdout.trim().split('\n'), paths, r.stderr);
});
