// The tests read committed reference copies only; `npm run references` (scripts/check-references.ts)
// holds them to their source where it is at hand. Here on a made-up source folder: the check
// passes on identical files and names a copy that differs by one byte.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { REFERENCES, staleReferences } from '../../scripts/check-references.js';
import { REPO } from '../helpers/cli.js';

test('the reference check passes on matching sources and names a copy that differs', (t) => {
  const source = mkdtempSync(path.join(os.tmpdir(), 'references-'));
  t.after(() => rmSync(source, { recursive: true, force: true }));
  for (const [name, copy] of Object.entries(REFERENCES)) copyFileSync(path.join(REPO, copy), path.join(source, name));
  assert.deepEqual(staleReferences(source), []);

  const doc = path.join(source, 'go-state-package-doc.txt');
  const text = readFileSync(doc, 'utf8');
  assert.ok(text.includes('func LoadState('), 'the doc as this test expects it');
  writeFileSync(doc, text.replace('func LoadState(', 'func LoadStates('));
  assert.deepEqual(staleReferences(source), [`${REFERENCES['go-state-package-doc.txt']} (${doc})`]);
});
