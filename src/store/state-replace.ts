// Go's Save of a whole in-memory document as a pure function (state-save.ts checks the revision
// and queues it): the rows and top-level fields as given, checked as an add checks a row.
import type { Session } from '../protocol/model.js';
import { stateGoFields } from '../protocol/model.js';
import { encodeSession, encodeStateDocument, UnsupportedValueError } from './go-json.js';
import { wellFormed } from './go-text.js';
import { assertKeptExactly, assertUnknownKeysKept, dropZeroes, encodable, isZeroValue, knownKeysOf, ROW_ZERO } from './row-checks.js';
import { newIncarnation } from './session-ids.js';
import type { Doc, Outcome } from './state-document.js';
import { StoreError } from './store-error.js';

type Row = Session;

const omittableTop = stateGoFields.filter((x) => x.omitempty && x.kind === 'string').map((x) => x.key);
/** The document's own keys: state.json's top level is 1 deep. */
const topKeys = knownKeysOf(stateGoFields);

/**
 * Go's Save of a whole in-memory document (state/save): the rows in the order given, every field
 * as given, unknown fields kept. As Go's ensureSessionIncarnationsLocked, a row whose incarnation
 * is empty or repeats an earlier row's gets a fresh one; ids are written as given (Go's Save
 * assigns none; the next load does, in memory). Zero-valued omitempty fields are dropped, so memory
 * holds what the file will. A row equal to the current row at the same place keeps that object,
 * so the feed reports only rows that changed and their bytes are not encoded again.
 */
export function replaceDocument(doc: Doc, raw: Doc): Outcome<{ changed: boolean }> {
  const given = wellFormed(raw);
  assertUnknownKeysKept(given, topKeys, 'state', 1);
  const top: Record<string, unknown> = { ...given, home: { id: given.home.id, type: given.home.type } };
  for (const key of omittableTop) if (isZeroValue(top[key])) delete top[key];
  const old = doc.sessions ?? [];
  let rows: Row[] | null = null;
  if (given.sessions) {
    const taken = new Set(given.sessions.map((r) => r.incarnation ?? ''));
    const seen = new Set<string>();
    rows = given.sessions.map((r, i) => {
      assertKeptExactly(r);
      let row = dropZeroes({ ...ROW_ZERO, ...r });
      const inc = row.incarnation ?? '';
      if (inc === '' || seen.has(inc)) {
        const fresh = newIncarnation(taken);
        taken.add(fresh);
        row = dropZeroes({ ...row, incarnation: fresh });
      }
      seen.add(row.incarnation as string);
      const prev = old[i];
      return prev !== undefined && encodeSession(prev) === encodeSession(encodable(row)) ? prev : encodable(row);
    });
  }
  top.sessions = rows;
  const next = top as Doc;
  const sameRows = rows === null ? doc.sessions === null
    : doc.sessions !== null && rows.length === old.length && rows.every((r, i) => r === old[i]);
  if (sameRows && encodeTop(next) === encodeTop(doc)) return { doc, result: { changed: false } };
  if (sameRows) next.sessions = doc.sessions;
  return { doc: next, result: { changed: true } };
}

/** The document without its rows, as Go would write it: what tells two documents' top fields apart. */
function encodeTop(doc: Doc): string {
  try {
    return encodeStateDocument({ ...doc, sessions: doc.sessions === null ? null : [] });
  } catch (err) {
    if (err instanceof UnsupportedValueError) throw new StoreError('invalid-input', err.message);
    throw err;
  }
}

