// What a row must be before it goes into the document: its unknown fields kept exactly as the
// file would give them back, encodable as Go would write it, and in Go's shape (zero-valued
// omitempty fields dropped, keys in Go's order), so memory holds what the file will.
import type { NewSession, Session } from '../protocol/model.js';
import { sessionGoFields } from '../protocol/model.js';
import { keptValueProblem } from './go-decode.js';
import { encodeSession, UnsupportedValueError } from './go-json.js';
import { goFoldKey } from './key-fold.js';
import { StoreError } from './store-error.js';
import { hasOwn, setOwn } from '../common/own-key.js';

type Row = Session;

/** The zero values of the fields Go writes even when empty (no omitempty): what a row read or saved starts from. */
export const ROW_ZERO = { name: '', channelID: '', type: '', cmd: '' };

/** The keys a level of state.json knows, and each one's Go-folded form (key-fold.ts). */
export interface KnownKeys {
  readonly known: ReadonlySet<string>;
  readonly folded: ReadonlyMap<string, string>;
}

/** The keys of `fields` (a protocol/model.ts field list) as a KnownKeys. */
export const knownKeysOf = (fields: readonly { key: string }[]): KnownKeys => ({
  known: new Set(fields.map((x) => x.key)),
  folded: new Map(fields.map((x) => [goFoldKey(x.key), x.key])),
});

const sessionKeys = knownKeysOf(sessionGoFields);

/**
 * Refuses an unknown key of `obj` (named `at` in errors, `depth` levels deep in state.json) the
 * file could not give back as it came: a number beyond float64; nesting past what state.json may
 * hold; a key Go's decoder folds onto a known field (another case, ſ for s, K for k), which the
 * next start would read as that field, replacing the row's own. So a value accepted now can
 * never make the next start refuse the file.
 */
export function assertUnknownKeysKept(obj: object, keys: KnownKeys, at: string, depth: number): void {
  for (const [key, value] of Object.entries(obj)) {
    if (keys.known.has(key)) continue;
    const folded = keys.folded.get(goFoldKey(key));
    if (folded) {
      throw new StoreError('invalid-input', `${at}.${key} differs from the field "${folded}" only in case (as Go folds keys); `
        + 'the next start would read it as that field');
    }
    const bad = keptValueProblem(value, `${at}.${key}`, depth);
    if (bad) throw new StoreError('invalid-input', `${bad.at} ${bad.rule}`);
  }
}

/** assertUnknownKeysKept for a row: a row sits 3 levels deep in state.json. */
export function assertKeptExactly(session: NewSession): void {
  assertUnknownKeysKept(session, sessionKeys, 'session', 3);
}

export const isZeroValue = (v: unknown): boolean =>
  v === undefined || v === null || v === '' || v === 0 || v === false || (Array.isArray(v) && v.length === 0);

/**
 * Refuses a row the file cannot hold (NaN cost, fractional cap) when it is made, alone: queued
 * beside others, its encoding failure would reject every mutation of the same write. Checking the
 * row, not the whole document, keeps a mutation's cost independent of how many sessions there are.
 */
export function encodable(row: Row): Row {
  try {
    encodeSession(row);
  } catch (err) {
    if (err instanceof UnsupportedValueError) throw new StoreError('invalid-input', err.message);
    throw err;
  }
  return row;
}

const omittable = new Set(sessionGoFields.filter((x) => x.omitempty).map((x) => x.key));

const goOrder = sessionGoFields.map((x) => x.key);

/**
 * Drops zero-valued omitempty fields, so memory holds what the file would hold after a reload,
 * with keys in Go's order (then unknown ones), so replies read like the file.
 */
export function dropZeroes(row: Row): Row {
  const out: Record<string, unknown> = {};
  const r = row as Record<string, unknown>;
  for (const k of goOrder) if (hasOwn(r, k) && (!omittable.has(k) || !isZeroValue(r[k]))) out[k] = r[k];
  for (const [k, v] of Object.entries(r)) if (!hasOwn(out, k) && !(omittable.has(k) && isZeroValue(v))) setOwn(out, k, v);
  return out as Row;
}

/** Whether a patch value equals what the row holds (zero values alike, arrays element by element). */
export function sameValue(a: unknown, b: unknown): boolean {
  if (isZeroValue(a) && isZeroValue(b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => x === b[i]);
  return a === b;
}
