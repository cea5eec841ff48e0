// scripts/client-types-cache.ts: a changed byte or an added file in the contract is a new key (so
// no stale text can be found), and a key seen before answers from the cache without compiling.
import assert from 'node:assert/strict';
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { cachedClientTypesSource, clientTypesKey } from '../../scripts/client-types-cache.js';
import { REPO } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

function contractCopy(): string {
  const dir = path.join(tempDir('hs-types-cache-'), 'protocol');
  cpSync(path.join(REPO, 'src/protocol'), dir, { recursive: true });
  return dir;
}

test('the key is the same for the same contract, and new for a changed byte or an added file', () => {
  const a = contractCopy();
  const b = contractCopy();
  const key = clientTypesKey(a);
  assert.match(key, /^[0-9a-f]{64}$/);
  assert.equal(clientTypesKey(b), key, 'another folder with the same files');
  const names = readdirSync(a).sort();
  for (const name of [names[0]!, names.at(-1)!]) {
    const c = contractCopy();
    const text = readFileSync(path.join(c, name), 'utf8');
    writeFileSync(path.join(c, name), text.replace(/\n$/, ' \n'));
    assert.notEqual(clientTypesKey(c), key, `one byte more in ${name}`);
  }
  const added = contractCopy();
  writeFileSync(path.join(added, 'zz.ts'), '');
  assert.notEqual(clientTypesKey(added), key, 'an empty file added');
});

test('a key seen before is answered from the cache folder', () => {
  const protocol = contractCopy();
  const cache = tempDir('hs-types-cache-dir-');
  writeFileSync(path.join(cache, `${clientTypesKey(protocol)}.ts.txt`), 'the text kept for this key\n');
  assert.equal(cachedClientTypesSource(protocol, cache), 'the text kept for this key\n');
});
