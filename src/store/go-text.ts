// Go's strings.TrimSpace, which differs from String.prototype.trim: Go trims NEL (U+0085) and
// keeps the BOM (U+FEFF); JS does the opposite. Journals and transcript lines are trimmed with it.
const SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const EDGES = new RegExp(`^${SPACE}+|${SPACE}+$`, 'g');

export function goTrimSpace(s: string): string {
  return s.replace(EDGES, '');
}
