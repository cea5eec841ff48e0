// Did-you-mean for a mistyped command or flag: the closest known word by edit distance.

/**
 * Edit distance counting an insertion, a deletion, a substitution or a swap of two neighbours
 * as one (optimal string alignment): `tial` is one typo away from `tail`, not two.
 */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  const at = (i: number, j: number): number => (d[i] as number[])[j] as number;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      (d[i] as number[])[j] = best;
    }
  }
  return at(a.length, b.length);
}

/**
 * The candidate closest to `word`, if close enough to be a typo: at most a third of the word's
 * length away (at least 1, at most 3), or `word` is a prefix of exactly one candidate.
 */
export function suggest(word: string, candidates: readonly string[]): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(word.length / 3)));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(word, c);
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  if (best !== undefined && bestDistance <= limit) return best;
  const prefixed = word.length >= 2 ? candidates.filter((c) => c.startsWith(word)) : [];
  return prefixed.length === 1 ? prefixed[0] : undefined;
}
