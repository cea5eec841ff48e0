// How Go's encoding/json matches an object key to a struct field when no key matches exactly:
// case-insensitively under Unicode simple case folding (unicode.SimpleFold; Go 1.21+ folds each
// rune to the smallest rune of its fold orbit, older Go compares with bytes.EqualFold: the same
// classes). So `reſumeToken` (U+017F, whose orbit is S s ſ) and `KIND` with U+212A KELVIN SIGN
// (orbit K k K) name Go's fields `resumeToken` and `kind`. A key kept as an unknown field must
// never fold onto a known one: Go would read it as that field.
//
// The fold key below is exact for every key that can fold onto an ASCII one, which every field
// name of the Go package is: ASCII letters compare without case, and the only runes outside
// ASCII whose orbit holds an ASCII letter are U+017F (s) and U+212A (k) (checked against Go's
// unicode tables by test/store/key-fold.test.ts). Other runes are kept as they are.

/** Non-ASCII runes whose simple-fold orbit holds an ASCII letter, with that letter's fold. */
const FOLDS_TO_ASCII = new Map<number, string>([
  [0x017f, 'S'], // LATIN SMALL LETTER LONG S
  [0x212a, 'K'], // KELVIN SIGN
]);

/** The key under Go's field-name folding: two keys Go would match to one field have the same fold key. */
export function goFoldKey(key: string): string {
  let out = '';
  for (const ch of key) {
    const cp = ch.codePointAt(0) as number;
    if (cp < 0x80) out += cp >= 0x61 && cp <= 0x7a ? String.fromCharCode(cp - 0x20) : ch;
    else out += FOLDS_TO_ASCII.get(cp) ?? ch;
  }
  return out;
}

/** The runes outside ASCII that fold onto an ASCII letter (for tests). */
export const runesFoldingToAscii = (): number[] => [...FOLDS_TO_ASCII.keys()];
