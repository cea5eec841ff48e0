// Where the store reports what it did not hand back to a caller: a warning for what it tolerated
// and repaired, an error for what went wrong with nobody to answer (a background checkpoint, a
// close, a side file found damaged). Every error also reaches the storage health that `status`
// reports, so nothing the store swallows is silent.

import type { StorageHealth } from './health.js';

/** The part of the storage health tracker the store feeds. */
export type HealthSink = Pick<StorageHealth, 'recordError' | 'checkpointFailed' | 'checkpointSucceeded' | 'stateUnreadable'>;

export interface StoreLog {
  /** Tolerated and repaired (a torn tail cut, appends put back by a replay). */
  warn(message: string, err?: unknown): void;
  /** Went wrong and nobody else will hear of it: logged at `error` and recorded in the health. */
  error(message: string, err?: unknown): void;
  /** A checkpoint of the write-ahead log failed (unhealthy until one succeeds), or succeeded. */
  checkpointFailed(err: unknown): void;
  checkpointSucceeded(): void;
  /** state.json, changed by another process, cannot be loaded (unhealthy, writes refused), or can again. */
  stateUnreadable(unreadable: boolean): void;
}

/** A StoreLog writing to `warn`/`error` callbacks and feeding `health` (each optional). */
export function storeLog(o: {
  warn?: (message: string, err?: unknown) => void;
  error?: (message: string, err?: unknown) => void;
  health?: HealthSink;
}): StoreLog {
  const warn = o.warn ?? (() => undefined);
  const error = o.error ?? warn;
  return {
    warn,
    error(message, err) {
      o.health?.recordError(message, err ?? new Error(message));
      error(message, err);
    },
    checkpointFailed(err) {
      o.health?.checkpointFailed(err);
    },
    checkpointSucceeded() {
      o.health?.checkpointSucceeded();
    },
    stateUnreadable(unreadable) {
      o.health?.stateUnreadable(unreadable);
    },
  };
}

