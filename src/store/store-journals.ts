// Each session's participants journal as the Store serves it (store.ts delegates here): appends
// taken in the write order (write-order.ts) and written by the session's Participants
// (session-files.ts, participants.ts); reads and removal.
import { inStateDir } from './in-state-dir.js';
import { participantsRel } from './paths.js';
import type { SessionFiles } from './session-files.js';
import type { StateDirWatch } from './state-gone.js';
import type { AppendOptions, WriteOrder } from './write-order.js';

export class StoreJournals {
  constructor(
    private readonly order: WriteOrder,
    private readonly files: SessionFiles,
    private readonly dirWatch: StateDirWatch,
  ) {}

  /** Adds a user id to a session's journal; `added` is false when it was there already. */
  appendParticipant(name: string, userId: string, opts: AppendOptions = {}): Promise<boolean> {
    return this.order.noted(this.order.forAppend(name, opts, () => inStateDir(this.dirWatch, `append to ${participantsRel(name)}`, () =>
      this.files.appendingJournal(name, (j) => j.append(userId)))));
  }

  async readParticipants(name: string): Promise<string[]> {
    return this.files.withJournal(name, (j) => j.read());
  }

  async removeParticipants(name: string): Promise<boolean> {
    this.order.assertOpen();
    return this.order.noted(this.order.inTurn(name, () => inStateDir(this.dirWatch, `remove ${participantsRel(name)}`, () => this.files.withJournal(name, (j) => j.remove()))));
  }
}
