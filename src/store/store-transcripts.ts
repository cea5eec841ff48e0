// Each session's transcript as the Store serves it (store.ts delegates here): appends answered
// once per idempotency key (append-keys.ts), taken in the write order (write-order.ts) and written
// by the session's Transcript (session-files.ts, transcript.ts); reads, pages and usage.
import type { Session } from '../protocol/model.js';
import type { AppendKeys } from './append-keys.js';
import { inStateDir } from './in-state-dir.js';
import { isPathComponent, transcriptRel } from './paths.js';
import type { SessionFiles } from './session-files.js';
import type { StateDirWatch } from './state-gone.js';
import type { ForwardCursor, ForwardPage, Page } from './transcript-pages.js';
import type { Entry } from './transcript-read.js';
import type { Usage } from './usage.js';
import { zeroUsage } from './usage.js';
import type { AppendOptions, WriteOrder } from './write-order.js';

export class StoreTranscripts {
  constructor(
    private readonly appendKeys: AppendKeys,
    private readonly order: WriteOrder,
    private readonly files: SessionFiles,
    private readonly dirWatch: StateDirWatch,
    /** The session rows now (sessionInfos lists them). */
    private readonly listSessions: () => Session[],
  ) {}

  /** Appends one entry to a session's transcript (refused without a session row unless asked); resolves with its seq. */
  appendTranscript(name: string, entry: Entry, opts: AppendOptions = {}): Promise<number> {
    return this.appendKeys.keyed(opts.writer, (key) =>
      this.order.noted(this.order.forAppend(name, opts, () => inStateDir(this.dirWatch, `append to ${transcriptRel(name)}`, () =>
        this.files.appendingTranscript(name, (t) => t.append(entry, key))))));
  }

  async readTranscript(name: string, limit = 0): Promise<Entry[]> {
    return this.files.withTranscript(name, (t) => t.read(limit));
  }

  async lastTranscriptTs(name: string): Promise<string> {
    return this.files.withTranscript(name, (t) => t.last());
  }

  /** The newest `limit` entries older than seq `before`, and the seq of the first (paging). */
  async readTranscriptPage(name: string, opts: { limit?: number; before?: number }): Promise<Page> {
    return this.files.withTranscript(name, (t) => t.page(opts));
  }

  /** Entries of `name` from seq `from` on, a bounded page at a time (Transcript.pageFrom). */
  async readTranscriptFrom(name: string, from: number, bounds: { limit: number; maxBytes: number }, cursor?: ForwardCursor): Promise<ForwardPage> {
    return this.files.withTranscript(name, (t) => t.pageFrom(from, bounds, cursor));
  }

  /** Usage over every entry ever appended under `name`, compacted ones included. */
  async transcriptUsage(name: string): Promise<Usage> {
    return this.files.withTranscript(name, (t) => t.usage());
  }

  /** Every session with its newest ts and usage, from memory once each transcript was read. */
  async sessionInfos(): Promise<{ session: Session; lastTs: string; usage: Usage }[]> {
    return Promise.all(
      this.listSessions().map(async (session) => {
        // A legacy row named "../x" has no file we may read: it is listed with no transcript.
        if (!isPathComponent(session.name)) return { session, lastTs: '', usage: zeroUsage() };
        const usage = await this.files.withTranscript(session.name, (t) => t.usage());
        return { session, lastTs: usage.lastTs, usage };
      }),
    );
  }

  async removeTranscript(name: string): Promise<boolean> {
    this.order.assertOpen();
    return this.order.noted(this.order.inTurn(name, () => inStateDir(this.dirWatch, `remove ${transcriptRel(name)}`, () => this.files.withTranscript(name, (t) => t.remove()))));
  }
}
