// The store's per-name objects (a Transcript, a Participants journal), kept between calls so
// appends queue in one place and a loaded snapshot is not re-read. Bounded: an object is idle
// when no call on it is in flight (no queued append, load, read or removal); idle ones beyond
// the bound are closed, least recently used first. One whose name has no session row is closed
// as soon as it is idle, so asking about 300 000 unknown names keeps nothing, unless it was
// appended to (Go's rule lets a name without a row be written): that name has a file that
// will grow, and re-reading it for every append would make each one cost the file's size.

import { readFileSync } from 'node:fs';

/** Names whose objects are kept while idle, per kind (~2 KB each; see docs/limits.md). */
export const DEFAULT_CACHED_NAMES = 1024;

/**
 * Descriptors the rest of the process may need at once, besides the idle names' files: every
 * socket connection (256), the listener, stdio, the lock files, state.json and its temp file,
 * the write-ahead log and a checkpoint's syncs (wal.ts, SYNCS_AT_ONCE), the writer thread,
 * compactions and reads in flight.
 */
const RESERVED_FDS = 384;

/**
 * The bound per kind for this process: DEFAULT_CACHED_NAMES, lowered so that the idle files of
 * both kinds and RESERVED_FDS fit under the soft limit on open files. An idle object keeps its
 * file open, so 1024 of each under `ulimit -n 1024` would make writes fail with EMFILE; fewer
 * kept only means more re-opens.
 */
export function cachedNamesForFdLimit(limit: number | undefined = softFdLimit()): number {
  if (limit === undefined) return DEFAULT_CACHED_NAMES;
  return Math.max(16, Math.min(DEFAULT_CACHED_NAMES, Math.floor((limit - RESERVED_FDS) / 2)));
}

let softLimit: { value: number | undefined } | undefined;

/**
 * The soft RLIMIT_NOFILE, from /proc (Linux); undefined where it cannot be read. Read once per
 * process: every store opens with it, and a shared server opens one per state.
 */
function softFdLimit(): number | undefined {
  softLimit ??= { value: readSoftFdLimit() };
  return softLimit.value;
}

function readSoftFdLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return line === undefined || line === 'unlimited' ? undefined : Number(line);
  } catch {
    // Not Linux (macOS has no /proc): its default soft limit is 256, so keep few.
    return process.platform === 'linux' ? undefined : 256;
  }
}

interface Slot<T> {
  value: T;
  /** Calls in flight on `value`: it is never closed while this is above 0. */
  busy: number;
  /** Kept while idle even without a session row (within the bound): it was written to. */
  written: boolean;
}

export class NameCache<T extends { close(): Promise<void>; settled(): Promise<void> }> {
  /** In use order: least recently used first. */
  private readonly slots = new Map<string, Slot<T>>();
  /** Closes of evicted objects still running: close() waits for them. */
  private readonly closing = new Set<Promise<void>>();

  constructor(
    private readonly bound: number,
    private readonly make: (name: string) => T,
    /** Whether an idle object for `name` is worth keeping (its session row exists). */
    private readonly worthKeeping: (name: string) => boolean,
    /** Where a failed close of an evicted object is reported (nobody else awaits it). */
    private readonly onError: (message: string, err?: unknown) => void,
  ) {}

  /** How many names have an object now. */
  get size(): number {
    return this.slots.size;
  }

  /**
   * Runs `fn` on the name's object (made if needed). `fn` is called synchronously, so calls keep
   * their order in the object's queue; the object stays until the promise `fn` returns settles.
   * `writes`: the call appends, so the object is kept while idle even for a name without a row.
   */
  use<R>(name: string, fn: (value: T) => Promise<R>, { writes = false }: { writes?: boolean } = {}): Promise<R> {
    let slot = this.slots.get(name);
    if (slot) this.slots.delete(name);
    else slot = { value: this.make(name), busy: 0, written: false };
    this.slots.set(name, slot); // most recently used last
    slot.busy++;
    if (writes) slot.written = true;
    let out: Promise<R>;
    try {
      out = fn(slot.value);
    } catch (err) {
      out = Promise.reject(err);
    }
    const s = slot;
    const release = (): void => {
      s.busy--;
      if (s.busy === 0 && !s.written && !this.worthKeeping(name)) this.evict(name, s);
      this.trim();
    };
    // Beside the caller's promise, not in front of it: the caller is answered without waiting a
    // turn for the bookkeeping (and its rejection still reaches the caller, handled or not).
    out.then(release, release);
    return out;
  }

  /** Resolves when every object's queued work is done. */
  async settled(): Promise<void> {
    await Promise.all([...this.slots.values()].map((s) => s.value.settled()));
  }

  /** Closes every object, and waits for the closes of those evicted before. */
  async close(): Promise<void> {
    await Promise.all([...this.slots.values()].map((s) => s.value.close()));
    await Promise.all([...this.closing]);
  }

  /** Evicts idle objects, least recently used first, until at most `bound` are kept. */
  private trim(): void {
    if (this.slots.size <= this.bound) return;
    for (const [name, slot] of this.slots) {
      if (this.slots.size <= this.bound) break;
      if (slot.busy === 0) this.evict(name, slot);
    }
  }

  private evict(name: string, slot: Slot<T>): void {
    if (this.slots.get(name) !== slot) return;
    this.slots.delete(name);
    // Idle: nothing is queued, so closing only releases the file handle.
    const p = slot.value.close().catch((err: unknown) => this.onError(`closing the idle file of ${JSON.stringify(name)} failed`, err));
    this.closing.add(p);
    void p.finally(() => this.closing.delete(p));
  }
}
