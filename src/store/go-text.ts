// Go's strings.TrimSpace, which differs from String.prototype.trim: Go trims NEL (U+0085) and
// keeps the BOM (U+FEFF); JS does the opposite. Journals and transcript lines are trimmed with it.
import { setOwn } from '../common/own-key.js';

const SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const EDGES = new RegExp(`^${SPACE}+|${SPACE}+$`, 'g');

export function goTrimSpace(s: string): string {
  return s.replace(EDGES, '');
}

/**
 * Replaces lone UTF-16 surrogates with U+FFFD everywhere in a JSON value, as a round trip through
 * Go (or our file encoding) would: memory then holds exactly what the file will hold.
 */
export function wellFormed<T>(value: T): T {
  if (typeof value === 'string') return (value.isWellFormed() ? value : value.toWellFormed()) as T;
  if (Array.isArray(value)) return value.map((x: unknown) => wellFormed(x)) as T;
  if (value !== null && typeof value === 'object') {
    if (flatAndWellFormed(value as Record<string, unknown>)) return value; // the usual case: no copy
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) setOwn(out, wellFormed(k), wellFormed(v));
    return out as T;
  }
  return value;
}

/** True for an object of primitives whose strings (keys included) are all well formed. */
function flatAndWellFormed(o: Record<string, unknown>): boolean {
  for (const k in o) {
    const v = o[k];
    if (!k.isWellFormed()) return false;
    if (typeof v === 'string') {
      if (!v.isWellFormed()) return false;
    } else if (v !== null && typeof v === 'object') return false;
  }
  return true;
}
