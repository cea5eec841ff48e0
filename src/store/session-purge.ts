// session/remove with purge: the row goes, and the name's transcript and journal with it. The
// files' removals take their place among the name's writes at once, behind the appends made
// before and in front of any made after (queued once the row is gone, they would delete a later
// append that session/add or requireSession false let through); each runs only if the row's
// removal commits.
import type { SessionFiles } from './session-files.js';
import { StoreError } from './store-error.js';
import type { WriteOrder } from './write-order.js';

/** Removes the name's files once `rowRemoved` commits; resolves with its result, or why a file is left. */
export async function purgeWithRow<R>(order: WriteOrder, files: SessionFiles, name: string, rowRemoved: Promise<R>): Promise<R> {
  const removals = Promise.all([
    order.noted(order.inTurn(name, () => files.withTranscript(name, (t) => t.remove(rowRemoved)))),
    order.noted(order.inTurn(name, () => files.withJournal(name, (j) => j.remove(rowRemoved)))),
  ]);
  // Marked handled, not dropped: when the row's removal is refused, that refusal is the answer
  // (thrown by `await rowRemoved` below, and the files' tasks remove nothing); otherwise
  // `await removals` below surfaces the files' own error.
  removals.catch(() => undefined);
  const removed = await rowRemoved;
  try {
    await removals;
  } catch (err) {
    // The row is gone and stays gone (no write undoes a commit): say so, and how to finish.
    if (!(err instanceof StoreError) || err.kind !== 'io') throw err;
    throw new StoreError('io', `session ${JSON.stringify(name)} was removed, but not all of its files: ${err.message}; `
      + 'session/remove with purge again removes what is left', err.data, err.code);
  }
  return removed;
}
