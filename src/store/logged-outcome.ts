// What a write-ahead batch sent with its lines as one group of the writer thread (Io.writeLogged)
// answers, from the group's outcome per write. A line's failure is its entry's answer only when
// the group shows its record was left out (GuardFailed): then neither is in a file. Any other
// failure of a record (a failed write, or a worker lost with the batch, when what it wrote is
// unknown) fails the whole batch, which the log cuts back, so no record of a refused append can
// come back at replay.
import { GuardFailed, LineNotWritten } from './writer-thread-jobs.js';

/**
 * Per entry, its line's failure (LineNotWritten) or undefined; throws the failure of a record
 * that was not left out by its guard, or of the log's sync when any record went in.
 * `lineAt`/`recordAt` are each entry's line's and record's index in `got`; `syncAt` the sync's.
 */
export function loggedOutcome(got: readonly (Error | undefined)[], lineAt: readonly (number | undefined)[], recordAt: readonly number[], syncAt: number): (LineNotWritten | undefined)[] {
  const out: (LineNotWritten | undefined)[] = [];
  for (const [i, at] of recordAt.entries()) {
    const recordErr = got[at];
    const line = lineAt[i];
    if (recordErr instanceof GuardFailed && line !== undefined) {
      out.push(new LineNotWritten(got[line] ?? recordErr));
      continue;
    }
    if (recordErr) throw recordErr;
    out.push(undefined);
  }
  // The sync matters only for the records written; with none, the log is as it was.
  const syncErr = got[syncAt];
  if (syncErr && out.some((e) => !e)) throw syncErr;
  return out;
}
