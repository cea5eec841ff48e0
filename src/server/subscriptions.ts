// The change feed: subscriptions per connection, fed by the store's commit events (which fire
// only once a change is in the file, in commit order). Sending never waits: a subscriber that
// stops reading builds up unsent notifications until a bound, then gets watch/overflow and is
// dropped, so writers and other clients never notice it and memory stays bounded.
import type { z } from 'zod';
import type { Session, StateDocument, TranscriptEntry } from '../protocol/model.js';
import type { NotificationName, NotificationTable } from '../protocol/table.js';
import type { watchSubscribe } from '../protocol/watch.js';

/** Unsent notifications a subscriber may have before it is dropped. */
export const MAX_PENDING_NOTIFICATIONS = 4096;
/** Their approximate size in bytes, for the same decision (one entry can be megabytes). */
export const MAX_PENDING_BYTES = 16 * 1024 * 1024;

export interface NotificationSink {
  /** Sends a notification; resolves once it has been handed to the transport. */
  notify(method: string, params: unknown): Promise<void>;
}

type Filter = z.output<(typeof watchSubscribe)['params']>;

interface Subscription {
  readonly id: string;
  readonly sink: NotificationSink;
  readonly sessions: boolean;
  readonly transcripts: '*' | ReadonlySet<string> | undefined;
  readonly participants: '*' | ReadonlySet<string> | undefined;
  pending: number;
  pendingBytes: number;
  dropped: boolean;
}

const names = (v: Filter['transcripts']): Subscription['transcripts'] => (v === '*' ? '*' : v ? new Set(v) : undefined);
const matches = (f: Subscription['transcripts'], name: string): boolean => f === '*' || (f !== undefined && f.has(name));

type Params<N extends NotificationName> = z.input<NotificationTable[N]['params']>;

export class Subscriptions {
  private readonly subs = new Map<string, Subscription>();
  private next = 1;

  add(sink: NotificationSink, filter: Filter): string {
    const id = `w${this.next++}`;
    this.subs.set(id, {
      id,
      sink,
      sessions: filter.sessions ?? false,
      transcripts: names(filter.transcripts),
      participants: names(filter.participants),
      pending: 0,
      pendingBytes: 0,
      dropped: false,
    });
    return id;
  }

  /** Ends `id` if `sink` owns it. */
  remove(sink: NotificationSink, id: string): boolean {
    const s = this.subs.get(id);
    if (!s || s.sink !== sink) return false;
    this.subs.delete(id);
    return true;
  }

  /** Ends every subscription of a connection (it closed). */
  removeAll(sink: NotificationSink): void {
    for (const [id, s] of this.subs) if (s.sink === sink) this.subs.delete(id);
  }

  get size(): number {
    return this.subs.size;
  }

  stateCommitted(revision: number, before: StateDocument, after: StateDocument): void {
    const watchers = [...this.subs.values()].filter((s) => s.sessions);
    if (watchers.length === 0) return;
    const fields = Object.keys({ ...before, ...after }).filter((k) => k !== 'sessions' && !sameField(before[k], after[k]));
    const rowChanges = diffSessions(before.sessions ?? [], after.sessions ?? []);
    for (const s of watchers) {
      for (const c of rowChanges) {
        this.send(s, 'session/didChange', { subscription: s.id, revision, ...c }, 512);
      }
      if (fields.length) this.send(s, 'state/didChange', { subscription: s.id, revision, fields }, 128);
    }
  }

  transcriptAppended(name: string, seq: number, entry: TranscriptEntry): void {
    for (const s of this.subs.values()) {
      if (matches(s.transcripts, name)) {
        this.send(s, 'transcript/didAppend', { subscription: s.id, name, seq, entry }, 256 + entry.text.length);
      }
    }
  }

  participantAdded(name: string, userId: string): void {
    for (const s of this.subs.values()) {
      if (matches(s.participants, name)) this.send(s, 'participants/didAdd', { subscription: s.id, name, userId }, 128);
    }
  }

  private send<N extends NotificationName>(s: Subscription, method: N, params: Params<N>, bytes: number): void {
    if (s.dropped) return;
    if (s.pending + 1 > MAX_PENDING_NOTIFICATIONS || s.pendingBytes + bytes > MAX_PENDING_BYTES) {
      s.dropped = true;
      this.subs.delete(s.id);
      void s.sink.notify('watch/overflow', { subscription: s.id } satisfies Params<'watch/overflow'>).catch(() => undefined);
      return;
    }
    s.pending++;
    s.pendingBytes += bytes;
    s.sink.notify(method, params).then(
      () => {
        s.pending--;
        s.pendingBytes -= bytes;
      },
      () => {
        // the connection is gone: its close removes the subscription
      },
    );
  }
}

function sameField(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  return JSON.stringify(a) === JSON.stringify(b);
}

type RowChange = { kind: 'added' | 'updated' | 'removed'; name: string; session?: Session };

/** Row changes by name (first row of a name, as FindSession); unchanged rows keep their identity. */
function diffSessions(before: readonly Session[], after: readonly Session[]): RowChange[] {
  const firstByName = (rows: readonly Session[]) => {
    const m = new Map<string, Session>();
    for (const r of rows) if (!m.has(r.name)) m.set(r.name, r);
    return m;
  };
  const b = firstByName(before);
  const a = firstByName(after);
  const out: RowChange[] = [];
  for (const [name, row] of a) {
    const old = b.get(name);
    if (!old) out.push({ kind: 'added', name, session: row });
    else if (old !== row) out.push({ kind: 'updated', name, session: row });
  }
  for (const name of b.keys()) if (!a.has(name)) out.push({ kind: 'removed', name });
  return out;
}
