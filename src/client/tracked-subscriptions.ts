// The subscriptions a reconnecting client keeps across connections: each under the id the caller
// was first given, with what it has seen (the epoch, the last revision, the last seq per
// transcript), so a new connection re-subscribes it with `since` and the notification handlers
// keep receiving, each change once. Notifications are routed through here to learn what was seen
// and to put the caller's id back.
import type { Link } from './link.js';
import { SESSION_NAME_PATTERN } from '../protocol/session-name.js';

type Params = Record<string, unknown>;

/** A subscription as the caller knows it, and what it has seen (for `since`). */
interface Tracked {
  readonly userId: string;
  currentId: string;
  /** The subscribe params without `since`. */
  readonly filter: Params;
  epoch: string | undefined;
  revision: number | undefined;
  readonly seqs: Map<string, number>;
}

export class TrackedSubscriptions {
  private readonly tracked = new Map<string, Tracked>();
  private readonly byCurrent = new Map<string, Tracked>();
  /** Notifications for a subscription id not known yet (its subscribe reply is being handled). */
  private held: [string, Params][] | undefined;
  private subscribing = 0;

  constructor(
    /** Whether subscriptions are kept for a reconnect (the client reconnects). */
    private readonly keeps: () => boolean,
    /** Hands a notification, its subscription id the caller's, to the handlers. */
    private readonly deliver: (method: string, params: unknown) => void,
  ) {}

  /** Subscribes every tracked subscription again on `link`, with what it saw. */
  async resubscribe(link: Link): Promise<void> {
    for (const t of this.tracked.values()) {
      const since: Params = {};
      if (t.epoch !== undefined) since.epoch = t.epoch;
      if (t.filter.sessions === true && t.revision !== undefined) since.revision = t.revision;
      const seqs = new Map(t.seqs);
      // "*": a session the subscriber saw nothing of was made after it subscribed (the seq of
      // every one there then was read, below), so all its entries are new to it: -1. Without
      // this, what was appended to it while the subscriber was away would never be sent.
      // A legacy row's name outside session/add's rule may not name a file the server reads, and
      // one such name in `since` would end the subscription (watch/overflow): left out.
      if (t.filter.transcripts === '*') {
        for (const name of await sessionNames(link)) if (!seqs.has(name) && SESSION_NAME_PATTERN.test(name)) seqs.set(name, -1);
      }
      if (seqs.size > 0) since.transcripts = Object.fromEntries(seqs);
      const r = (await this.subscribeOn(link, { ...t.filter, since }, undefined, (id) => {
        this.byCurrent.delete(t.currentId);
        t.currentId = id;
        this.byCurrent.set(id, t);
      })) as { subscription: string; revision: number; epoch: string };
      // What is replayed (or resynced) carries revisions up to this one.
      t.epoch = r.epoch;
      t.revision = r.revision;
    }
  }

  /**
   * watch/subscribe on `link`; `known` maps the new id before any notification for it is routed
   * (they are held until the reply has been handled).
   */
  private async subscribeOn(link: Link, params: Params, deadline: number | undefined, known: (id: string) => void): Promise<unknown> {
    this.subscribing++;
    this.held ??= [];
    try {
      const r = (await link.request('watch/subscribe', params, left(deadline))) as { subscription: string };
      known(r.subscription);
      return r;
    } finally {
      if (--this.subscribing === 0) {
        const held = this.held ?? [];
        this.held = undefined;
        for (const [method, p] of held) this.route(method, p);
      }
    }
  }

  /** watch/subscribe on `link`, the subscription kept for a reconnect when the client reconnects. */
  async subscribe(link: Link, params: Params, deadline: number | undefined): Promise<unknown> {
    const { since, ...filter } = params as Params & { since?: { epoch?: string; revision?: number; transcripts?: Record<string, number> } };
    let t: Tracked | undefined;
    const r = (await this.subscribeOn(link, params, deadline, (id) => {
      if (!this.keeps()) return;
      t = { userId: id, currentId: id, filter, epoch: undefined, revision: undefined, seqs: new Map(Object.entries(since?.transcripts ?? {})) };
      this.tracked.set(id, t);
      this.byCurrent.set(id, t);
    })) as { subscription: string; revision: number; epoch: string };
    if (!t) return r;
    t.epoch = r.epoch;
    t.revision = Math.max(r.revision, t.revision ?? -1);
    // Where each listed transcript (with "*", each session's) stands now, so a reconnect asks for
    // what follows it (an entry appended meanwhile is notified, and the seq only moves forward).
    const names = Array.isArray(filter.transcripts) ? (filter.transcripts as string[])
      : filter.transcripts === '*' ? (await sessionNames(link, left(deadline)).catch(() => [])).filter((n) => SESSION_NAME_PATTERN.test(n)) : [];
    const listed = names.filter((n) => !t!.seqs.has(n));
    await Promise.all(listed.map(async (name) => {
      try {
        const page = (await link.request('transcript/read', { name, limit: 1 }, left(deadline))) as { firstSeq: number; entries: unknown[] };
        const seq = page.firstSeq + page.entries.length - 1;
        if (!t!.seqs.has(name) || t!.seqs.get(name)! < seq) t!.seqs.set(name, seq);
      } catch {
        // No such session yet: its entries will all be new; the first notified sets the seq.
      }
    }));
    return r;
  }

  /** watch/unsubscribe on `link`, of the id the server knows a kept subscription by now. */
  async unsubscribe(link: Link, params: Params, deadline: number | undefined): Promise<unknown> {
    const t = typeof params.subscription === 'string' ? this.tracked.get(params.subscription) : undefined;
    if (!t) return link.request('watch/unsubscribe', params, left(deadline));
    this.tracked.delete(t.userId);
    this.byCurrent.delete(t.currentId);
    return link.request('watch/unsubscribe', { ...params, subscription: t.currentId }, left(deadline));
  }

  /**
   * Updates what a tracked subscription saw, then hands the notification to the handlers (held
   * while a subscribe's reply is handled and the id is not known yet).
   */
  route(method: string, raw: unknown): void {
    let params = raw as Params;
    const id = typeof params?.subscription === 'string' ? params.subscription : undefined;
    if (id !== undefined && this.held && !this.byCurrent.has(id) && this.tracked.size + this.subscribing > 0) {
      this.held.push([method, params]);
      return;
    }
    const t = id === undefined ? undefined : this.byCurrent.get(id);
    if (t) {
      params = { ...params, subscription: t.userId };
      const rev = typeof params.revision === 'number' ? params.revision : undefined;
      if (method === 'transcript/didAppend' && typeof params.name === 'string' && typeof params.seq === 'number') t.seqs.set(params.name, params.seq);
      else if (method === 'state/resync') {
        t.revision = rev;
        if (typeof params.epoch === 'string') t.epoch = params.epoch;
      } else if (rev !== undefined) t.revision = Math.max(rev, t.revision ?? -1);
      else if (method === 'watch/overflow') {
        // The server dropped it: nothing more comes under this id until the caller subscribes again.
        this.tracked.delete(t.userId);
        this.byCurrent.delete(t.currentId);
      }
    }
    this.deliver(method, params);
  }
}

/** The names of the session rows on `link` (session/list). */
async function sessionNames(link: Link, timeoutMs?: number): Promise<string[]> {
  const r = (await link.request('session/list', {}, timeoutMs)) as { sessions?: { name?: unknown }[] | null };
  return (r.sessions ?? []).map((s) => s.name).filter((n): n is string => typeof n === 'string');
}

/** Milliseconds left until `deadline` (undefined: no deadline). */
export function left(deadline: number | undefined): number | undefined {
  return deadline === undefined ? undefined : Math.max(0, deadline - Date.now());
}
