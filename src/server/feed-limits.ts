// The change feed's bounds and the shapes it talks to: the connection it sends on (a sink), the
// store it catches up from (a source), and what it counts. Declared here once; the feed, the
// server and the tests import them.
import type { StateDocument, TranscriptEntry } from '../protocol/model.js';

/** Unsent messages a connection may have before its subscriptions overflow (each costs Node
 *  some bookkeeping beyond its bytes, so tiny notifications are bounded by count too). */
export const MAX_PENDING_NOTIFICATIONS = 4096;
/**
 * Encoded bytes (what goes on the wire: escapes, multi-byte UTF-8, framing) a connection may have
 * unsent before its subscriptions overflow. Counted over everything unsent on the connection, so
 * 32 subscriptions share one bound; one notification may pass it (it is already in memory).
 */
export const MAX_PENDING_BYTES = 16 * 1024 * 1024;
/**
 * Encoded bytes unsent on all subscribed connections together past which the feed is crowded:
 * then a connection holding more than MAX_PENDING_BYTES_WHEN_CROWDED unsent gets watch/overflow
 * at its next notification, whatever its own bound says. 16 stalled subscribers could otherwise
 * hold 16 × 16 MiB; with this, the feed holds at most this plus 1 MiB per connection.
 */
export const MAX_PENDING_BYTES_IN_TOTAL = 128 * 1024 * 1024;
/** What one connection may hold unsent while the feed is crowded (a prompt reader holds ~0). */
export const MAX_PENDING_BYTES_WHEN_CROWDED = 1024 * 1024;
/** Subscriptions one connection may hold; one more is refused with -32600. */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 64;
/** State commits whose changes a returning subscriber can be replayed; older means state/resync. */
export const MAX_REPLAY_REVISIONS = 1024;
/** Row changes kept for replay, all kept commits together (a commit that touched many rows ages out sooner). */
export const MAX_REPLAY_ROW_CHANGES = 8192;
/** Entries a catch-up page holds at most (also: replayed state notifications sent before waiting). */
export const CATCH_UP_PAGE_ENTRIES = 256;
/** Bytes of transcript lines a catch-up page holds at most (one longer entry is read whole). */
export const CATCH_UP_PAGE_BYTES = 256 * 1024;
/**
 * Unsent bytes a connection may have before its catch-up reads the next page: a page is read only
 * once the connection has taken nearly all of the last.
 */
export const CATCH_UP_DRAINED_BYTES = 64 * 1024;
/** Catch-up pages read at once, all connections together (each is parsed into memory). */
export const MAX_CATCH_UP_READS = 4;

export interface NotificationSink {
  /** Sends a notification; never throws (drops it when the connection is closed). */
  notify(method: string, params: unknown): void;
  /** Encoded bytes written to the connection and not yet handed to the OS. */
  unsentBytes(): number;
  /** Messages written to the connection and not yet handed to the OS. */
  unsentFrames(): number;
  readonly isClosed: boolean;
  /** Resolves once at most `bytes` are unsent (catching up waits on it instead of overflowing). */
  whenUnsentAtMost?(bytes: number): Promise<void>;
}

/** What catching up reads: the store as it is now. */
export interface FeedSource {
  /** The state revision now. */
  readonly revision: number;
  /** The run the revisions belong to (the store's); a feed without one makes its own. */
  readonly epoch?: string;
  /** The state document now (what state/get answers). */
  document(): StateDocument;
  /**
   * A page of the entries of `name` from seq `from` on (at most `bounds`), oldest first, as far as
   * the file still has them (compaction may have dropped the oldest: then `firstSeq` > `from`);
   * `end` is the seq the next append will get. The `cursor` of a page, passed back with the next
   * `from`, goes on from where that page stopped.
   */
  entriesFrom(name: string, from: number, bounds: { limit: number; maxBytes: number }, cursor?: unknown): Promise<FeedPage>;
  /** Where a failure with no caller to tell goes (the server's log). */
  error(message: string, err: unknown): void;
}

/** A page of a transcript's entries, as FeedSource.entriesFrom reads it. */
export interface FeedPage {
  firstSeq: number;
  entries: TranscriptEntry[];
  end: number;
  cursor?: unknown;
}

/** What watch/subscribe answers. */
export interface Subscribed {
  subscription: string;
  revision: number;
  epoch: string;
}

export interface SubscriptionLimits {
  /** MAX_PENDING_BYTES_IN_TOTAL by default (tests go lower). */
  readonly pendingBytesInTotal?: number;
  /** MAX_PENDING_BYTES by default (tests go lower, so a test passes the bound with less data). */
  readonly pendingBytes?: number;
  /** MAX_PENDING_NOTIFICATIONS by default (tests go lower). */
  readonly pendingNotifications?: number;
  /** Told of each catch-up step (tests order by it). */
  readonly observer?: CatchUpObserver;
}

export interface CatchUpObserver {
  /** A page of `entries` entries was read for `subscription`. */
  pageRead?(subscription: string, entries: number): void;
  /** `subscription`'s catch-up waits for its connection to take what it was sent. */
  waiting?(subscription: string): void;
  /** `subscription`'s catch-up is over (done, or ended by a close): it reads nothing more. */
  ended?(subscription: string): void;
}

/** What catching up holds now and has done (for `status`, and for tests). */
export interface CatchUpCounters {
  /** Catch-ups under way. */
  running: number;
  /** Entries read from files and not yet handed to their connection, all catch-ups together. */
  entriesInMemory: number;
  /** The most entriesInMemory has been. */
  entriesInMemoryPeak: number;
  /** Pages read since the start. */
  pages: number;
}
