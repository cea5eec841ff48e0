// The mutations of state.json waiting for a group commit (state-store.ts): what each holds, how a
// batch is applied again onto another document, and how long a commit waits for more callers.
import type { Doc, Outcome } from './state-document.js';
import type { WriterKey } from './writer-sequences.js';

/** Commits shorter than this never wait for more callers: a timer's 1 ms grain is half of it. */
const GATHER_FROM_MS = 2;
const GATHER_MAX_MS = 10;

/**
 * How long the next commit may wait for the callers the last one answered: as long as that
 * commit took. A caller that comes back just after a commit started waits for all of it before
 * its own, so waiting up to one commit for it makes it no later, and those already waiting at
 * most one commit later. A rewrite of a big state.json (1.8 MB at 5 000 sessions: ~4 ms, mostly
 * its fdatasync) then answers all of them at once instead of every other one
 * (docs/performance.md, "Mutations at 5 000 sessions").
 */
export function gatherMs(lastCommitMs: number): number {
  return lastCommitMs < GATHER_FROM_MS ? 0 : Math.min(GATHER_MAX_MS, lastCommitMs);
}

export interface Pending {
  readonly apply: (doc: Doc) => Outcome<unknown>;
  result: unknown;
  changed: boolean;
  /** Set while this mutation, applied to the document before it, refuses: it fails with its batch. */
  refused?: unknown;
  /** Written even unchanged when there is no file (a whole-document save, as Go's Save). */
  writeIfMissing?: boolean;
  /** The write's idempotency key, recorded with its commit (state-keys.ts). */
  key?: WriterKey | undefined;
}

/**
 * Applies `pending` onto `head` in order and returns the document after them; one that throws is
 * refused (a refusal is decided again: the document before it changed).
 */
export function applyAll(head: Doc, pending: Pending[]): Doc {
  let doc = head;
  for (const p of pending) {
    p.refused = undefined;
    try {
      const out = p.apply(doc);
      p.result = out.result;
      p.changed = out.doc !== doc;
      doc = out.doc;
    } catch (err) {
      p.refused = err;
      p.changed = false;
    }
  }
  return doc;
}
