import { isUtf8 } from 'node:buffer';

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

/**
 * Bytes as Go reads them into a string and writes them out in JSON: each byte that does not
 * start a valid UTF-8 sequence becomes one U+FFFD (utf8.DecodeRune's RuneError of size 1).
 * Buffer.toString replaces a truncated sequence ("\xe2\x82") with a single U+FFFD where Go
 * gives two, so bytes Go wrote (a participant id is written raw) would read back differently.
 */
export function goDecodeUtf8(buf: Uint8Array): string {
  if (isUtf8(buf)) return Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('utf8');
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  let out = '';
  let start = 0;
  for (let i = 0; i < b.length;) {
    const size = runeSize(b, i);
    if (size > 0) {
      i += size;
      continue;
    }
    out += `${b.toString('utf8', start, i)}\ufffd`;
    start = ++i;
  }
  return out + b.toString('utf8', start);
}

/** The length of the valid UTF-8 sequence at b[i], or 0 (Go's utf8.DecodeRune ranges). */
function runeSize(b: Buffer, i: number): number {
  const c = b[i] as number;
  if (c < 0x80) return 1;
  if (c < 0xc2 || c > 0xf4) return 0;
  const n = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
  if (i + n > b.length) return 0;
  const c1 = b[i + 1] as number;
  const lo = c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80;
  const hi = c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf;
  if (c1 < lo || c1 > hi) return 0;
  for (let k = 2; k < n; k++) if (((b[i + k] as number) & 0xc0) !== 0x80) return 0;
  return n;
}
