// Did-you-mean for a mistyped command or flag: the closest known word by edit distance.

import { editDistance } from '../common/edit-distance.js';

export { editDistance };

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
