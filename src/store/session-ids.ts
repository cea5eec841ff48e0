// The ids and incarnations rows get, as Go's state package makes them: new ones for an add or a
// save, and the backfills Go's LoadState runs on a file read from disk.
import { randomBytes } from 'node:crypto';
import type { Session } from '../protocol/model.js';
import type { Doc } from './state-document.js';

type Row = Session;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** What the generators below must avoid: a Set, or a SessionIndex's counts. */
interface Taken {
  has(key: string): boolean;
}

/** `inc_` + 26 base32 characters from a CSPRNG, as Go's `"inc_" + rand.Text()`; never one in `taken`. */
export function newIncarnation(taken: Taken): string {
  for (;;) {
    const bytes = randomBytes(26);
    let s = 'inc_';
    for (const b of bytes) s += BASE32[b % 32];
    if (!taken.has(s)) return s;
  }
}

/** Go's newSessionID: `s_<name>`, then `s_<name>_1`, `_2`… while taken. */
export function newSessionID(name: string, taken: Taken): string {
  const base = `s_${name}`;
  if (!taken.has(base)) return base;
  for (let i = 1; ; i++) if (!taken.has(`${base}_${i}`)) return `${base}_${i}`;
}

/**
 * Go's LoadState backfills: ids for rows without one (in file order, memory only), then a fresh
 * incarnation for every row whose incarnation is empty or repeats an earlier one. `persist` says
 * whether incarnations changed, which Go saves at once; an id-only backfill is not saved.
 */
export function backfill(doc: Doc): { doc: Doc; persist: boolean } {
  const rows = doc.sessions;
  if (!rows || rows.length === 0) return { doc, persist: false };
  const ids = new Set(rows.map((r) => r.id ?? '').filter((id) => id !== ''));
  const seen = new Set<string>();
  // A fresh incarnation avoids every incarnation of the file and every one given so far: one set
  // for the whole walk (a set per row was quadratic in rows to backfill).
  const taken = new Set(rows.map((x) => x.incarnation ?? ''));
  let persist = false;
  const next = rows.map((row) => {
    let r = row;
    if (!r.id) {
      const id = newSessionID(r.name, ids);
      ids.add(id);
      r = { ...r, id };
    }
    const inc = r.incarnation ?? '';
    if (inc === '' || seen.has(inc)) {
      const fresh = newIncarnation(taken);
      taken.add(fresh);
      r = { ...reorder(r, 'incarnation', fresh) };
      persist = true;
    }
    seen.add(r.incarnation as string);
    return r;
  });
  return { doc: { ...doc, sessions: next }, persist };
}

// Spread keeps insertion order for unknown keys; known keys are re-ordered by the encoder anyway.
const reorder = (r: Row, key: string, value: unknown): Row => ({ ...r, [key]: value });
