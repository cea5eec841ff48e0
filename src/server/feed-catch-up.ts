// Sending a returning subscriber what it missed (watch/subscribe with `since`): the state
// notifications the feed decided at subscribe, then each transcript's entries after the seq it
// saw, read from the file a bounded page at a time, the next page only once the connection has
// taken the last (so a slow reader holds at most a page, whatever the transcript's size). Live
// state and participants notifications are held meanwhile (subscription-table.ts) and sent after;
// live entries of a transcript being caught up are not: the file has them, and the pages go on
// until they are sent. The subscriber sees each change once, in order.
import { CatchUpPages } from './catch-up-pages.js';
import type { CatchUpCounters, CatchUpObserver, FeedPage, FeedSource } from './feed-limits.js';
import { CATCH_UP_DRAINED_BYTES, CATCH_UP_PAGE_ENTRIES } from './feed-limits.js';
import type { Held, Params, Subscription, SubscriptionTable } from './subscription-table.js';

/** The catch-ups of a feed: started per subscription, all ended by close(). */
export class FeedCatchUp {
  private closed = false;
  private signalClosed!: () => void;
  /** Resolves once close() was called: a catch-up waiting for its connection stops waiting. */
  private readonly whenClosed = new Promise<void>((resolve) => (this.signalClosed = resolve));
  private readonly endWaiters: (() => void)[] = [];
  private readonly pages: CatchUpPages;

  constructor(
    private readonly table: SubscriptionTable,
    private readonly source?: FeedSource,
    private readonly observer?: CatchUpObserver,
  ) {
    this.pages = new CatchUpPages(source, observer);
  }

  /** What catching up holds now and has done. */
  get counters(): CatchUpCounters {
    return this.pages.counters;
  }

  /**
   * Ends every catch-up at its next step (the server is stopping): none reads another page, one
   * waiting for its connection stops waiting. Resolves once all are over (a page being read is
   * finished first: bounded by one page each).
   */
  close(): Promise<void> {
    this.closed = true;
    this.signalClosed();
    this.pages.close();
    if (this.counters.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.endWaiters.push(resolve));
  }

  /** Starts sending `s` what it missed on the next turn of the event loop (once the subscribe's reply is on its way). */
  start(s: Subscription, preface: Held[], names: [string, number][]): void {
    this.counters.running++;
    setImmediate(() =>
      void this.run(s, preface, names).finally(() => {
        this.counters.running--;
        this.observer?.ended?.(s.id);
        if (this.counters.running === 0) for (const w of this.endWaiters.splice(0)) w();
      }),
    );
  }

  /**
   * Sends `s` what it missed, then what was held meanwhile, then lets live notifications through.
   * Each transcript is read a page at a time, the next page once the connection has taken the
   * last, one page at a time per connection, so a long backlog never overflows it and a slow
   * reader holds one page. A read that fails ends the subscription with watch/overflow (subscribe
   * again), and is logged. Ends at its next step once the subscription or the feed is closed.
   */
  private async run(s: Subscription, preface: Held[], names: [string, number][]): Promise<void> {
    const open = (): boolean => !this.closed && this.table.isCurrent(s) && !s.sink.isClosed;
    try {
      for (let i = 0; i < preface.length; i++) {
        if (!open()) return;
        this.table.deliver(s, preface[i]!, this.table.crowded());
        if ((i + 1) % CATCH_UP_PAGE_ENTRIES === 0) await this.drained(s);
      }
      for (const [name, seen] of names) {
        const c = s.catching?.get(name);
        if (!c) continue;
        let cursor: unknown;
        let first = true;
        let emptyAt: number | undefined;
        for (;;) {
          if (!open()) return;
          // Waiting for the connection, reading and sending are one turn of the connection: its
          // other subscriptions' pages wait, so it is sent one page at a time.
          const from = c.next;
          const page = await this.pages.inTurn(s.sink, async () => {
            await this.drained(s);
            if (!open()) return undefined;
            const p = await this.pages.read(s.id, name, from, cursor);
            if (p) this.sendPage(s, name, p, !open() || (first && p.end <= seen));
            return p;
          });
          if (!page || !open()) return;
          // A file whose next seq is at or below what the subscriber saw was removed and began
          // again (seq restarts at 0): all of it is new to the subscriber (nothing was sent).
          if (first && page.end <= seen) {
            first = false;
            c.next = 0;
            cursor = undefined;
            continue;
          }
          first = false;
          if (page.entries.length > 0) {
            c.next = page.firstSeq + page.entries.length;
            cursor = page.cursor;
            continue;
          }
          // The file's end as the read found it. An entry appended since was not sent live: read
          // on for it, once (a file that lost it meanwhile, removed, has nothing more to give).
          if (c.liveMax >= c.next && emptyAt !== c.next) {
            emptyAt = c.next;
            continue;
          }
          s.catching?.delete(name);
          break;
        }
      }
    } catch (err) {
      this.source?.error(`watch/subscribe: what subscription ${s.id} missed could not be read; it gets watch/overflow`, err);
      if (open()) {
        this.table.drop(s);
        s.sink.notify('watch/overflow', { subscription: s.id } satisfies Params<'watch/overflow'>);
      }
      return;
    }
    if (!open()) return;
    const held = s.held ?? [];
    s.held = undefined;
    s.catching = undefined;
    const crowded = this.table.crowded();
    for (const h of held) {
      if (!open()) return;
      this.table.deliver(s, h, crowded);
    }
  }

  /** Resolves once `s`'s connection has taken nearly all it was sent (at once when it is closed). */
  private async drained(s: Subscription): Promise<void> {
    if (s.sink.unsentBytes() <= CATCH_UP_DRAINED_BYTES || !s.sink.whenUnsentAtMost) return;
    this.observer?.waiting?.(s.id);
    await Promise.race([s.sink.whenUnsentAtMost(CATCH_UP_DRAINED_BYTES), this.whenClosed]);
  }

  /** Hands a page's entries to the connection (each checked against the bounds, as live ones are); `drop`: none, the page is let go. */
  private sendPage(s: Subscription, name: string, page: FeedPage, drop = false): void {
    try {
      for (let i = 0; i < page.entries.length && !drop; i++) {
        if (!this.table.isCurrent(s)) return;
        this.table.deliver(s, { method: 'transcript/didAppend', params: { subscription: s.id, name, seq: page.firstSeq + i, entry: page.entries[i]! } }, this.table.crowded());
      }
    } finally {
      this.pages.released(page);
    }
  }
}
