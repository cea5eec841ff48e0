// What the store knows about its own storage health, for `status`: the last storage error (and
// when) and whether the write-ahead log's checkpoint is failing. The store and its files feed it;
// it never throws and never logs (the caller already logged what it records).

/** A storage error as `status` reports it: the message, the errno name when there is one, and when. */
export interface StorageErrorRecord {
  message: string;
  code?: string;
  /** Epoch milliseconds. */
  at: number;
}

export interface HealthSnapshot {
  lastStorageError: StorageErrorRecord | null;
  /** The last checkpoint attempt failed and none succeeded since. */
  checkpointFailing: boolean;
  /**
   * No failing checkpoint, no storage error within RECENT_ERROR_MS of `now`, and state.json
   * loadable (one changed by another process that cannot be loaded refuses every write until it
   * is fixed, however long ago that was found).
   */
  healthy: boolean;
}

/** A storage error this recent makes the server unhealthy ("in the last minute", as `status` documents). */
export const RECENT_ERROR_MS = 60_000;

export class StorageHealth {
  private last: StorageErrorRecord | null = null;
  private failingCheckpoint = false;
  private unreadableState = false;

  /** Records a storage error (`context` says what was being done); the latest one is kept. */
  recordError(context: string, err: unknown, now: number = Date.now()): void {
    const e = err as { message?: unknown; code?: unknown } | undefined;
    const detail = typeof e?.message === 'string' ? e.message : String(err);
    const code = typeof e?.code === 'string' ? e.code : undefined;
    // An error logged with no cause is its own detail: said once, not "what: what".
    const message = context && context !== detail ? `${context}: ${detail}` : detail;
    this.last = { message, ...(code ? { code } : {}), at: now };
  }

  /** A checkpoint failed: unhealthy until one succeeds. Also recorded as the last storage error. */
  checkpointFailed(err: unknown, now: number = Date.now()): void {
    this.failingCheckpoint = true;
    this.recordError('checkpoint of the write-ahead log failed', err, now);
  }

  /** A checkpoint succeeded: a failure before it no longer counts (the error stays as the last one). */
  checkpointSucceeded(): void {
    this.failingCheckpoint = false;
  }

  /** Whether state.json, changed by another process, cannot be loaded now (writes are refused meanwhile). */
  stateUnreadable(unreadable: boolean): void {
    this.unreadableState = unreadable;
  }

  /** The health as of `now` (epoch ms). */
  snapshot(now: number = Date.now()): HealthSnapshot {
    const recent = this.last !== null && now - this.last.at < RECENT_ERROR_MS;
    return {
      lastStorageError: this.last ? { ...this.last } : null,
      checkpointFailing: this.failingCheckpoint,
      healthy: !this.failingCheckpoint && !recent && !this.unreadableState,
    };
  }
}
