// How many transcript compactions run at once in this process (docs/performance.md, "Memory under
// load"). A compaction
// holds the newest 2 MiB of lines and the parsed entries of its window (~10 MB for a 4 MiB file),
// and transcripts appended at the same pace reach the trigger together: 64 writers on 64 sessions
// compacted all at once and took the server to 800 MB. Compaction is mostly parsing and encoding
// on the event loop's one thread, so running several at once finishes none sooner; one at a time
// held the peak 8 MB lower than two in the memory bench. The rest wait here, inside their own
// file's queue (after the write-ahead log's checkpoint, and nothing a compaction awaits needs a
// slot), so only the appends to a file whose compaction waits wait with it, as they already wait
// for its compaction.
export const MAX_CONCURRENT_COMPACTIONS = 1;

/** A counting semaphore: `run` starts `f` once fewer than `size` runs are in progress, in call order. */
export class Slots {
  private busy = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly size: number) {}

  /** Runs in progress now (for tests). */
  get running(): number {
    return this.busy;
  }

  async run<T>(f: () => Promise<T>): Promise<T> {
    if (this.busy >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.busy++;
    try {
      return await f();
    } finally {
      // The slot passes straight to the next waiter, so a late caller cannot overtake it.
      const next = this.waiting.shift();
      if (next) next();
      else this.busy--;
    }
  }
}

/** Shared by every transcript of every store in this process: memory is per process. */
export const compactionSlots = new Slots(MAX_CONCURRENT_COMPACTIONS);
