// Reading what a returning subscriber missed, a page at a time: at most MAX_CATCH_UP_READS pages
// are read at once (each is parsed into memory), a connection's pages are read one after another
// (its subscriptions take turns), and what is in memory is counted for `status`.
import type { CatchUpCounters, CatchUpObserver, FeedPage, FeedSource, NotificationSink } from './feed-limits.js';
import { CATCH_UP_PAGE_BYTES, CATCH_UP_PAGE_ENTRIES, MAX_CATCH_UP_READS } from './feed-limits.js';

export class CatchUpPages {
  readonly counters: CatchUpCounters = { running: 0, entriesInMemory: 0, entriesInMemoryPeak: 0, pages: 0 };
  /** Per connection, the catch-up step running: one page at a time per connection. */
  private readonly turns = new Map<NotificationSink, Promise<void>>();
  private reading = 0;
  private readonly waiting: (() => void)[] = [];
  private closed = false;

  constructor(
    private readonly source: FeedSource | undefined,
    private readonly observer: CatchUpObserver | undefined,
  ) {}

  /** No page is read from now on; a read waiting for its turn stops waiting. */
  close(): void {
    this.closed = true;
    for (const w of this.waiting.splice(0)) w();
  }

  /** Runs `step` after the catch-up step of the same connection before it (one page at a time per connection). */
  inTurn<T>(sink: NotificationSink, step: () => Promise<T>): Promise<T> {
    const before = this.turns.get(sink) ?? Promise.resolve();
    const run = before.then(step);
    const done = run.then(noop, noop);
    this.turns.set(sink, done);
    void done.then(() => {
      if (this.turns.get(sink) === done) this.turns.delete(sink);
    });
    return run;
  }

  /** One page for `subscription`, read while at most MAX_CATCH_UP_READS others are, counted in memory until released. */
  async read(subscription: string, name: string, from: number, cursor: unknown): Promise<FeedPage | undefined> {
    if (!this.source) return undefined;
    while (this.reading >= MAX_CATCH_UP_READS) {
      if (this.closed) return undefined;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    if (this.closed) return undefined;
    this.reading++;
    try {
      const page = await this.source.entriesFrom(name, from, { limit: CATCH_UP_PAGE_ENTRIES, maxBytes: CATCH_UP_PAGE_BYTES }, cursor);
      this.counters.pages++;
      this.counters.entriesInMemory += page.entries.length;
      this.counters.entriesInMemoryPeak = Math.max(this.counters.entriesInMemoryPeak, this.counters.entriesInMemory);
      this.observer?.pageRead?.(subscription, page.entries.length);
      return page;
    } finally {
      this.reading--;
      this.waiting.shift()?.();
    }
  }

  /** A page's entries left memory (handed to the connection, or let go). */
  released(page: FeedPage): void {
    this.counters.entriesInMemory -= page.entries.length;
  }
}

function noop(): void {}
