// `herrscher-state tail NAME [-n N] [-f]` and `herrscher-state sessions`: what an operator runs
// to watch a session, over the running server's socket (never the files).
import { connect } from '../client/client.js';
import type { StateClient } from '../client/client.js';
import type { TranscriptEntry } from '../protocol/model.js';
import { namingServer } from './answered-by.js';
import type { ClientOptions } from './client-options.js';
import { replyTimeoutMs } from './reply-timeout.js';
import { safeJson } from './escape.js';
import { formatEntry, formatSessions } from './format.js';

export interface TailOptions {
  lines: number;
  follow: boolean;
  /** One JSON object per entry, `{"seq":N,"entry":{…}}`, instead of the readable line. */
  json: boolean;
  raw: boolean;
  /** With follow: ride over a server restart (reconnect and catch up) instead of exiting 1. */
  reconnect: boolean;
}

/**
 * Prints the newest `lines` entries; with `follow`, then every new one until interrupted (exit 0)
 * or the session is removed (exit 0, said on stderr). When the server goes away, `follow`
 * reconnects (said on stderr) and prints what was appended meanwhile, each entry once; with
 * `reconnect` false it exits 1 instead. A name with no session row is exit 1.
 */
export async function tail(name: string, t: TailOptions, o: ClientOptions): Promise<number> {
  const client = await connect({ ...o, reconnect: t.follow && t.reconnect, callTimeoutMs: replyTimeoutMs() });
  return namingServer(client, () => follow(client, name, t));
}

async function follow(client: StateClient, name: string, t: TailOptions): Promise<number> {
  const print = (seq: number, entry: TranscriptEntry): void =>
    void process.stdout.write(`${t.json ? safeJson({ seq, entry }) : formatEntry(entry, { raw: t.raw })}\n`);
  const say = (message: string): void => void process.stderr.write(`herrscher-state tail: ${message}\n`);
  let shown = -1; // the highest seq printed
  const appended: { seq: number; entry: TranscriptEntry }[] = [];
  let ready = false;
  let removed: (() => void) | undefined;
  const show = (seq: number, entry: TranscriptEntry): void => {
    if (seq <= shown) return; // already in the page read
    shown = seq;
    print(seq, entry);
  };
  if (t.follow) {
    // Subscribe first, then read: nothing appended in between is missed; seq drops duplicates.
    client.onNotification('transcript/didAppend', (n) => {
      if (n.name !== name) return;
      if (ready) show(n.seq, n.entry);
      else appended.push(n);
    });
    client.onNotification('session/didChange', (n) => {
      if (n.name === name && n.kind === 'removed') removed?.();
    });
    // After a restart the server sends the whole document: the row gone means removed meanwhile.
    client.onNotification('state/resync', (n) => {
      if (!(n.state.sessions ?? []).some((s) => s.name === name)) removed?.();
    });
    client.onConnectionState((c) => {
      if (c.state === 'lost' && t.reconnect) say(`the server went away (${c.error.message}); reconnecting…`);
      else if (c.state === 'restored') say('reconnected; following again from the last entry shown');
    });
    await client.watchSubscribe({ sessions: true, transcripts: [name] });
  }
  const { session } = await client.sessionFind({ name });
  if (!session) {
    await client.close();
    say(`no session named ${JSON.stringify(name)} (herrscher-state sessions lists them)`);
    return 1;
  }
  // transcript/read's limit 0 means all: for -n 0 read the newest entry only, to know where
  // following starts, and print none.
  const page = await client.transcriptRead({ name, limit: Math.max(t.lines, 1) });
  if (t.lines > 0) page.entries.forEach((e, i) => print(page.firstSeq + i, e));
  shown = page.firstSeq + page.entries.length - 1;
  // -n 0 -f: an entry the page holds but that was notified came after the subscription: printed.
  const firstNotified = appended[0];
  if (t.lines === 0 && firstNotified) shown = Math.min(shown, firstNotified.seq - 1);
  if (!t.follow) {
    await client.close();
    return 0;
  }
  ready = true;
  for (const n of appended) show(n.seq, n.entry);
  const end = await new Promise<'gone' | 'removed' | 'signal'>((resolve) => {
    removed = () => resolve('removed');
    client.onConnectionState((c) => {
      if (c.state === 'closed') resolve('gone');
    });
    if (client.closed) resolve('gone');
    for (const s of ['SIGINT', 'SIGHUP', 'SIGTERM'] as const) process.once(s, () => resolve('signal'));
  });
  const why = client.closed?.message;
  await client.close();
  if (end === 'gone') {
    say(`the server went away (${why ?? 'the connection closed'}); not reconnecting (--no-reconnect)`);
    return 1;
  }
  if (end === 'removed') say(`session ${JSON.stringify(name)} was removed; nothing more to follow`);
  return 0;
}

export async function sessions(o: ClientOptions & { json: boolean; raw: boolean }): Promise<number> {
  const client = await connect({ ...o, callTimeoutMs: replyTimeoutMs() });
  try {
    const result = await namingServer(client, () => client.sessionInfos());
    process.stdout.write(`${o.json ? safeJson(result, 2) : formatSessions(result.sessions, { raw: o.raw })}\n`);
    return 0;
  } finally {
    await client.close();
  }
}
