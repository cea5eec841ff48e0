// state/save: Go's Save of a whole in-memory document, with the optimistic check Go lacks. The
// caller names the revision (and the run: the epoch) it read; the save is taken only if the state
// is still there, else it is a conflict carrying the current revision.
import type { Doc } from './state-document.js';
import { replaceDocument } from './state-replace.js';
import { INSTANCE_ID_PATTERN } from '../protocol/model.js';
import type { StateStore } from './state-store.js';
import { StoreError } from './store-error.js';
import type { WriteOrder } from './write-order.js';
import type { WriterKey } from './writer-sequences.js';

/** Where the state stands: the revision of this run, and the run. */
export interface RevisionNow {
  readonly revision: number;
  readonly epoch: string;
}

/**
 * Saves `doc` (replaceDocument) if the state is still at `revision` (of `epoch`, when
 * given). Compared once no other state mutation is in flight: one accepted but not yet
 * committed would give the state a revision the caller has not seen. Resolves with the save's
 * own revision (unchanged when nothing changed). When there is no file, it is written even if
 * nothing changed, as Go's Save writes it. With a `writer` key already applied, answered as it was.
 */
export async function saveDocument(
  state: StateStore, order: WriteOrder, now: () => RevisionNow, doc: Doc, revision: number, epoch?: string, writer?: WriterKey,
): Promise<{ revision: number; changed: boolean }> {
  order.assertOpen();
  // Sent again once applied: answered as it was, before the revision (its own commit moved it) is compared.
  const prior = await state.priorAnswer(writer);
  if (prior) return { revision: now().revision, changed: (prior.answer as { changed: boolean }).changed };
  // A file changed by hand since the caller read it is a newer revision: the save is refused.
  await state.refresh();
  while (state.pendingDocument !== state.document) {
    await state.settled();
    order.assertOpen();
  }
  const base = state.document;
  const stale = (): StoreError => {
    const { revision: current, epoch: run } = now();
    return new StoreError('conflict',
      epoch !== undefined && epoch !== run
        ? `revision ${revision} belongs to another run of the server (epoch ${epoch}, now ${run}); read it again (state/get) and save on top of it`
        : `the state is at revision ${current}, not ${revision}; read it again (state/get) and save on top of it`,
      { revision: current });
  };
  // A revision of an earlier run can equal one of this run: only the epoch tells them apart.
  if (revision !== now().revision || (epoch !== undefined && epoch !== now().epoch)) throw stale();
  const { changed } = await order.saving(() => order.mutate((d) => {
    // Re-applied onto another document only after a failed write before it: not the base it was compared with.
    if (d !== base) throw stale();
    // A new instance id is held to setInstanceID's rule; one the file already holds is kept as it is.
    const id = doc.instanceID ?? '';
    if (id !== (d.instanceID ?? '') && id !== '' && !INSTANCE_ID_PATTERN.test(id)) {
      throw new StoreError('invalid-input', `instanceID ${JSON.stringify(id.slice(0, 40))} must be 1-32 letters, digits, "_", "." or "-", `
        + 'starting with a letter or digit: it names the default socket of every later start');
    }
    return replaceDocument(d, doc);
    // As Go's Save, a save writes the file even when nothing changed if there is none (NewState + Save).
  }, { writeIfMissing: true, key: writer }));
  return { revision: now().revision, changed };
}
