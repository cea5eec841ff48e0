// Every performance target names a row some bench measures: a row renamed or dropped would leave
// its target judging nothing, and the bench's table would silently stop saying MISSED.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../../bench/harness/config.js';
import { TARGETS } from '../../bench/targets.js';

/** The row ids the benches declare (`id: '…'` in a row spec; run.ts adds the whole-run RSS row). */
function declaredRowIds(): Set<string> {
  const dir = path.join(REPO, 'bench');
  const files = [...readdirSync(dir).filter((f) => f.endsWith('.bench.ts')), 'run.ts'];
  const ids = new Set<string>();
  for (const f of files) for (const m of readFileSync(path.join(dir, f), 'utf8').matchAll(/\bid: '([\w.-]+)'/g)) ids.add(m[1] as string);
  return ids;
}

test('every target in bench/targets.ts names a row a bench measures', () => {
  const ids = declaredRowIds();
  assert.ok(ids.size > 20, `found only ${ids.size} row ids: the pattern no longer matches the benches' row specs`);
  const orphans = Object.keys(TARGETS).filter((id) => !ids.has(id));
  assert.deepEqual(orphans, [], `targets without a row: ${orphans.join(', ')}`);
});
