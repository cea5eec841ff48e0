// The change feed: subscriptions per connection, fed by the store's commit events (which fire
// only once a change is in the file, in commit order). Sending never waits: a connection that
// stops reading builds up unsent notifications until a bound, counted in encoded bytes across
// all its subscriptions; then each of its subscriptions gets watch/overflow and is dropped, so
// writers and other clients never notice it and memory stays bounded (subscription-table.ts).
//
// A subscriber that comes back passes `since` (what it saw last). What it missed is sent first
// (feed-catch-up.ts): the state changes since its revision (kept here for the last
// MAX_REPLAY_REVISIONS commits of this run, the epoch), or one state/resync with the document;
// then each transcript's entries after its seq, read from the file a page at a time.
import { randomUUID } from 'node:crypto';
import type { StateDocument, TranscriptEntry } from '../protocol/model.js';
import { CommitHistory } from './commit-history.js';
import { FeedCatchUp } from './feed-catch-up.js';
import type { CatchUpCounters, FeedSource, NotificationSink, Subscribed, SubscriptionLimits } from './feed-limits.js';
import { MAX_PENDING_BYTES, MAX_PENDING_BYTES_IN_TOTAL, MAX_PENDING_NOTIFICATIONS } from './feed-limits.js';
import type { Filter, Held, Subscription } from './subscription-table.js';
import { matches, SubscriptionTable } from './subscription-table.js';

export class Subscriptions {
  private readonly table: SubscriptionTable;
  /** The store's run: revisions count from 0 again in the next one. */
  get epoch(): string {
    return this.source?.epoch ?? this.ownEpoch;
  }
  private readonly ownEpoch = randomUUID();
  private readonly history = new CommitHistory();
  private readonly catchUps: FeedCatchUp;
  /** What catching up holds now and has done. */
  get catchUp(): CatchUpCounters {
    return this.catchUps.counters;
  }

  constructor(
    limits: SubscriptionLimits = {},
    private readonly source?: FeedSource,
  ) {
    this.table = new SubscriptionTable({
      pendingBytesInTotal: limits.pendingBytesInTotal ?? MAX_PENDING_BYTES_IN_TOTAL,
      pendingBytes: limits.pendingBytes ?? MAX_PENDING_BYTES,
      pendingNotifications: limits.pendingNotifications ?? MAX_PENDING_NOTIFICATIONS,
    });
    this.catchUps = new FeedCatchUp(this.table, source, limits.observer);
  }

  /**
   * Ends every catch-up at its next step (the server is stopping): none reads another page, one
   * waiting for its connection stops waiting. Resolves once all are over (a page being read is
   * finished first: bounded by one page each).
   */
  close(): Promise<void> {
    return this.catchUps.close();
  }

  /**
   * Subscribes `sink` (see add). With `since`, what it missed is sent first, starting once the
   * reply is on its way (the next turn of the event loop), and live notifications wait for it.
   */
  subscribe(sink: NotificationSink, filter: Filter): Subscribed {
    const subscription = this.add(sink, filter);
    const revision = this.source?.revision ?? 0;
    const since = filter.since;
    if (!since) return { subscription, revision, epoch: this.epoch };
    const s = this.table.get(subscription)!;
    s.held = [];
    // The state part is decided now, against the revision just answered; later commits are held.
    const preface: Held[] = s.sessions && since.revision !== undefined ? this.stateSince(s, since.epoch, since.revision, revision) : [];
    const names = Object.entries(since.transcripts ?? {}).filter(([name]) => matches(s.transcripts, name));
    s.catching = new Map(names.map(([name, seen]) => [name, { next: seen + 1, liveMax: -1 }]));
    this.catchUps.start(s, preface, names);
    return { subscription, revision, epoch: this.epoch };
  }

  /** Subscribes `sink`; refused (-32600) past MAX_SUBSCRIPTIONS_PER_CONNECTION or once it closed. */
  add(sink: NotificationSink, filter: Filter): string {
    return this.table.add(sink, filter);
  }

  /** Ends `id` if `sink` owns it. */
  remove(sink: NotificationSink, id: string): boolean {
    return this.table.remove(sink, id);
  }

  /** Ends every subscription of a connection (it closed). */
  removeAll(sink: NotificationSink): void {
    this.table.removeAll(sink);
  }

  /** Subscriptions open, all connections together. */
  get size(): number {
    return this.table.size;
  }

  /** Subscriptions `sink` holds. */
  countOf(sink: NotificationSink): number {
    return this.table.countOf(sink);
  }

  stateCommitted(revision: number, before: StateDocument, after: StateDocument): void {
    // Recorded with or without watchers: a subscriber may come back for them.
    const { rows: rowChanges, fields } = this.history.record(revision, before, after);
    const watchers = [...this.table.values()].filter((s) => s.sessions);
    if (watchers.length === 0) return;
    const crowded = this.table.crowded();
    for (const s of watchers) {
      for (const c of rowChanges) this.table.send(s, 'session/didChange', { subscription: s.id, revision, ...c }, crowded);
      if (fields.length) this.table.send(s, 'state/didChange', { subscription: s.id, revision, fields }, crowded);
    }
  }

  transcriptAppended(name: string, seq: number, entry: TranscriptEntry): void {
    if (this.table.size === 0) return;
    const crowded = this.table.crowded();
    for (const s of this.table.values()) {
      if (matches(s.transcripts, name)) this.table.send(s, 'transcript/didAppend', { subscription: s.id, name, seq, entry }, crowded);
    }
  }

  participantAdded(name: string, userId: string): void {
    if (this.table.size === 0) return;
    const crowded = this.table.crowded();
    for (const s of this.table.values()) {
      if (matches(s.participants, name)) this.table.send(s, 'participants/didAdd', { subscription: s.id, name, userId }, crowded);
    }
  }

  /**
   * The state notifications a subscriber that saw `seen` is owed: the kept commits after it when
   * they reach back that far in this epoch, else one state/resync with the document now.
   */
  private stateSince(s: Subscription, epoch: string | undefined, seen: number, now: number): Held[] {
    const commits = epoch === this.epoch ? this.history.since(seen, now) : undefined;
    if (commits) {
      const out: Held[] = [];
      for (const c of commits) {
        for (const r of c.rows) out.push({ method: 'session/didChange', params: { subscription: s.id, revision: c.revision, ...r } });
        if (c.fields.length) out.push({ method: 'state/didChange', params: { subscription: s.id, revision: c.revision, fields: c.fields } });
      }
      return out;
    }
    if (!this.source) return [];
    return [{ method: 'state/resync', params: { subscription: s.id, revision: now, epoch: this.epoch, state: this.source.document() } }];
  }
}
