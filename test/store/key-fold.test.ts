// Go's decoder matches a key to a field under Unicode simple case folding, so a key kept as an
// unknown field must not fold onto a known one: `reſumeToken` would be Go's resumeToken. The
// fold is checked against Go's own unicode tables when `go` is on the PATH, and every known
// field is tried with generated keys (each letter in every case, s as U+017F, k as U+212A).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { goFoldKey, runesFoldingToAscii } from '../../src/store/key-fold.js';
import { sessionGoFields } from '../../src/protocol/model.js';
import { newSession, openIn, storeError } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

const hasGo = ((): boolean => {
  try {
    execFileSync('go', ['version'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
})();

test('the runes outside ASCII that fold onto ASCII are exactly those of Go\'s unicode.SimpleFold', { skip: hasGo ? false : 'go is not on the PATH', timeout: 120_000 }, () => {
  const dir = tempDir('hs-fold-');
  writeFileSync(path.join(dir, 'main.go'), `package main

import (
	"fmt"
	"unicode"
)

// Go 1.21+ encoding/json's foldRune: the smallest rune of the fold orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

func main() {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if f := foldRune(r); f < 0x80 {
			fmt.Printf("%d %c\\n", r, f)
		}
	}
}
`);
  const out = execFileSync('go', ['run', 'main.go'], { cwd: dir, encoding: 'utf8', env: { ...process.env, GOFLAGS: '-mod=mod', GO111MODULE: 'off' } });
  const fromGo = out.trim().split('\n').map((l) => l.split(' '));
  assert.deepEqual(fromGo.map(([r]) => Number(r)).sort(), runesFoldingToAscii().sort());
  for (const [r, f] of fromGo) assert.equal(goFoldKey(String.fromCodePoint(Number(r))), f);
});

/** Keys Go would match to `key` without matching it exactly: case flips and the two non-ASCII folds. */
function foldedVariants(key: string): string[] {
  const out = new Set<string>();
  out.add(key.toUpperCase());
  out.add(key[0]!.toUpperCase() + key.slice(1));
  for (let i = 0; i < key.length; i++) {
    const c = key[i]!;
    const swap = c === 's' || c === 'S' ? '\u017f' : c === 'k' || c === 'K' ? '\u212a' : undefined;
    if (swap) out.add(key.slice(0, i) + swap + key.slice(i + 1));
    if (/[a-z]/i.test(c)) out.add(key.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + key.slice(i + 1));
  }
  out.delete(key);
  return [...out];
}

test('session/add refuses every unknown key Go would fold onto a known field (generated: case flips, ſ for s, K for k)', async (t) => {
  const store = await openIn(tempDir());
  t.after(() => store.close());
  let tried = 0;
  for (const { key } of sessionGoFields) {
    for (const variant of foldedVariants(key)) {
      assert.equal(goFoldKey(variant), goFoldKey(key), `${variant} folds as ${key}`);
      await assert.rejects(() => store.addSession({ ...newSession(`n${tried}`), [variant]: 'evil' } as never),
        storeError('invalid-input', [variant, key]), `${variant} (for ${key}) was accepted`);
      tried++;
    }
  }
  assert.ok(tried > 100, `${tried} keys tried`);
  assert.deepEqual(store.listSessions(), [], 'nothing was added');
  // Keys Go keeps apart stay accepted: a rune that only looks like s, an unrelated key.
  await store.addSession({ ...newSession('ok'), re\u0455umeToken: 'cyrillic dze is not s', extra: 1 } as never);
  assert.equal(store.listSessions().length, 1);
});
