// `herrscher-state tail NAME [-n N] [-f]` and `herrscher-state sessions`: what an operator runs
// to watch a session, over the running server's socket (never the files).
import { connect } from '../client/client.js';
import type { ClientOptions } from './client-options.js';
import { formatEntry, formatSessions } from './format.js';

/** Prints the newest `lines` entries; with `follow`, then every new one until interrupted. */
export async function tail(name: string, lines: number, follow: boolean, o: ClientOptions): Promise<number> {
  const client = await connect(o);
  const out = (s: string) => process.stdout.write(`${s}\n`);
  let shown = -1; // the highest seq printed
  type Appended = { seq: number; entry: Parameters<typeof formatEntry>[0] };
  const appended: Appended[] = [];
  let ready = false;
  const show = (n: Appended): void => {
    if (n.seq <= shown) return; // already in the page read
    shown = n.seq;
    out(formatEntry(n.entry));
  };
  if (follow) {
    // Subscribe first, then read: nothing appended in between is missed; seq drops duplicates.
    client.onNotification('transcript/didAppend', (n) => {
      if (n.name !== name) return;
      if (ready) show(n);
      else appended.push(n);
    });
    await client.watchSubscribe({ transcripts: [name] });
  }
  const page = await client.transcriptRead({ name, limit: lines });
  for (const e of page.entries) out(formatEntry(e));
  shown = page.firstSeq + page.entries.length - 1;
  if (!follow) {
    await client.close();
    return 0;
  }
  ready = true;
  for (const n of appended) show(n);
  await new Promise<void>((resolve) => {
    client.connection.onClose(() => resolve());
    process.once('SIGINT', () => resolve());
    process.once('SIGHUP', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await client.close();
  return 0;
}

export async function sessions(o: ClientOptions): Promise<number> {
  const client = await connect(o);
  try {
    const { sessions: rows } = await client.sessionInfos();
    process.stdout.write(`${formatSessions(rows)}\n`);
    return 0;
  } finally {
    await client.close();
  }
}
