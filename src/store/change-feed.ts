// The change fan-out: what the store tells its listeners (the server's change feed) once a
// change is in its file, in commit order. Listeners are called synchronously, in the order they
// registered.
import type { Doc } from './state-document.js';
import type { Entry } from './transcript-read.js';

/** What the store reports once a change is in the file, in commit order (the change feed). */
export interface StoreEvents {
  /** A state.json commit; `revision` counts commits since the store opened. */
  stateCommitted(revision: number, before: Doc, after: Doc): void;
  transcriptAppended(name: string, seq: number, entry: Entry): void;
  participantAdded(name: string, userId: string): void;
}

export class ChangeFeed {
  private readonly listeners = new Set<Partial<StoreEvents>>();

  /** Registers listeners for committed changes; returns the function that removes them. */
  watch(listener: Partial<StoreEvents>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stateCommitted(revision: number, before: Doc, after: Doc): void {
    for (const l of this.listeners) l.stateCommitted?.(revision, before, after);
  }

  transcriptAppended(name: string, seq: number, entry: Entry): void {
    for (const l of this.listeners) l.transcriptAppended?.(name, seq, entry);
  }

  participantAdded(name: string, userId: string): void {
    for (const l of this.listeners) l.participantAdded?.(name, userId);
  }
}
