// How far apart two words are, and which known words are nearest to a mistyped one: for a
// did-you-mean (a command or flag of the CLI, a method name a client sent).

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
 * Up to `max` candidates nearest to `word`, nearest first: those within a third of its length
 * (at least 1, at most 3 edits, case ignored), else those it is a prefix of or that share its
 * part before a "/" (`session/lst` → every session/ method, nearest first).
 */
export function nearest(word: string, candidates: readonly string[], max = 3): string[] {
  const w = word.toLowerCase();
  const limit = Math.min(3, Math.max(1, Math.floor(w.length / 3)));
  const scored = candidates.map((c) => ({ c, d: editDistance(w, c.toLowerCase()) })).sort((a, b) => a.d - b.d || a.c.localeCompare(b.c));
  const close = scored.filter((s) => s.d <= limit);
  if (close.length > 0) return close.slice(0, max).map((s) => s.c);
  const prefix = w.includes('/') ? w.slice(0, w.indexOf('/') + 1) : w;
  return prefix.length >= 2 ? scored.filter((s) => s.c.toLowerCase().startsWith(prefix)).slice(0, max).map((s) => s.c) : [];
}
