// watch/subscribe with `since`: a subscriber that comes back (a new connection, a restarted
// server) is first sent what it missed, then the live feed, with no gap and no duplicate, even
// while a writer keeps appending across the subscribe. Revisions of another run are never
// replayed: they get one state/resync with the document.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StateDocument } from '../../src/protocol/model.js';
import type { NotificationSink } from '../../src/server/feed-limits.js';
import { Subscriptions } from '../../src/server/subscriptions.js';
import { MAX_REPLAY_REVISIONS } from '../../src/server/feed-limits.js';
import { entry, Inbox, TIMEOUT } from '../helpers/feed.js';
import { startServer } from '../helpers/server.js';

const seqsOf = (inbox: Inbox, name: string): number[] =>
  inbox.of('transcript/didAppend').filter((p) => p.name === name).map((p) => p.seq as number);

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

test('since: the entries after the seq seen, from the file, then live ones, each once, while a writer appends throughout', { timeout: TIMEOUT }, async (t) => {
  const server = await startServer(t);
  const writer = await server.client('lsp');
  await writer.sessionAdd({ session: { name: 'a' } });
  for (let i = 0; i < 50; i++) await writer.transcriptAppend({ name: 'a', entry: entry(`before${i}`) });

  // Appends go on while the subscriber comes back: some land before, during and after its catch-up.
  let stop = false;
  let last = 49;
  const appending = (async () => {
    // Batches in flight together, so appends complete between the subscribe and its file read.
    for (let i = 0; !stop; i += 20) {
      const batch = range(i, i + 19).map((j) => writer.transcriptAppend({ name: 'a', entry: entry(`during${j}`) }));
      for (const r of await Promise.all(batch)) last = Math.max(last, r.seq);
    }
  })();
  const watcher = await server.client('ndjson');
  const inbox = new Inbox(watcher, ['transcript/didAppend']);
  const got = await watcher.watchSubscribe({ transcripts: ['a'], since: { transcripts: { a: 19 } } });
  assert.equal(typeof got.epoch, 'string');
  await inbox.waitFor((n) => (n.params.seq as number) >= 400);
  stop = true;
  await appending;
  await inbox.waitFor((n) => n.params.seq === last);
  assert.deepEqual(seqsOf(inbox, 'a'), range(20, last), 'every seq after 19 once, in order');
  const texts = inbox.of('transcript/didAppend').map((p) => (p.entry as { text: string }).text);
  assert.equal(texts[0], 'before20');
  assert.ok(inbox.of('transcript/didAppend').every((p) => p.subscription === got.subscription));
});

test('since: the reply comes before what was missed (the subscriber knows its subscription id first)', { timeout: TIMEOUT }, async (t) => {
  const server = await startServer(t);
  const writer = await server.client('lsp');
  await writer.sessionAdd({ session: { name: 'a' } });
  for (let i = 0; i < 5; i++) await writer.transcriptAppend({ name: 'a', entry: entry(`e${i}`) });
  const raw = await server.raw('ndjson');
  const id = raw.send('watch/subscribe', { transcripts: ['a'], since: { transcripts: { a: -1 } } });
  await raw.waitFor((m) => 'method' in m && (m.params as { seq?: number }).seq === 4);
  const order = raw.received.map((m) => ('method' in m ? `${m.method} ${(m.params as { seq: number }).seq}` : `reply ${String((m as { id: unknown }).id)}`));
  assert.deepEqual(order, [`reply ${id}`, ...range(0, 4).map((s) => `transcript/didAppend ${s}`)]);
});

test('since: state changes after the revision seen are replayed in this run; a revision of another run gets state/resync', { timeout: TIMEOUT }, async (t) => {
  let server = await startServer(t);
  const dir = server.dir;
  let writer = await server.client('lsp');
  const first = await (await server.client('lsp')).watchSubscribe({ sessions: true });
  await writer.sessionAdd({ session: { name: 'a' } });
  await writer.sessionAdd({ session: { name: 'b' } });
  await writer.sessionSetArchived({ name: 'a', archived: true });

  // Same run: the three commits after `first.revision`, as they were told live.
  const again = await server.client('ndjson');
  const inbox = new Inbox(again, ['session/didChange', 'state/didChange', 'state/resync']);
  const sub = await again.watchSubscribe({ sessions: true, since: { epoch: first.epoch, revision: first.revision } });
  assert.equal(sub.epoch, first.epoch);
  await inbox.waitFor((n) => n.params.revision === sub.revision);
  const changes = inbox.of('session/didChange').map((p) => `${String(p.revision)} ${String(p.kind)} ${String(p.name)}`);
  assert.deepEqual(changes, [`${first.revision + 1} added a`, `${first.revision + 2} added b`, `${first.revision + 3} updated a`]);
  assert.deepEqual(inbox.of('state/resync'), []);

  // Live changes follow the replay.
  await writer.sessionRemove({ name: 'b' });
  await inbox.waitFor((n) => n.params.kind === 'removed');

  // Another run: revisions count from 0 again, so the old revision must not be trusted.
  await server.close();
  server = await startServer(t, { dir });
  writer = await server.client('lsp');
  const back = await server.client('ndjson');
  const inbox2 = new Inbox(back, ['session/didChange', 'state/didChange', 'state/resync']);
  const sub2 = await back.watchSubscribe({ sessions: true, since: { epoch: sub.epoch, revision: 0 } });
  assert.notEqual(sub2.epoch, sub.epoch, 'a new run has a new epoch');
  const resync = await inbox2.waitFor((n) => n.method === 'state/resync');
  const state = resync.params.state as StateDocument;
  assert.deepEqual((state.sessions ?? []).map((s) => [s.name, s.archived ?? false]), [['a', true]]);
  assert.equal(resync.params.revision, sub2.revision);
  assert.equal(resync.params.epoch, sub2.epoch);
  await writer.sessionAdd({ session: { name: 'c' } });
  await inbox2.waitFor((n) => n.params.name === 'c');
  assert.deepEqual(inbox2.notes.map((n) => n.method), ['state/resync', 'session/didChange'], 'one resync, then the live feed');
});

test('since across a restart: the transcript entries appended while the subscriber was away, from the file', { timeout: TIMEOUT }, async (t) => {
  let server = await startServer(t);
  const dir = server.dir;
  let writer = await server.client('lsp');
  await writer.sessionAdd({ session: { name: 'a' } });
  for (let i = 0; i < 10; i++) await writer.transcriptAppend({ name: 'a', entry: entry(`run1 ${i}`) });
  await server.close();
  server = await startServer(t, { dir });
  writer = await server.client('lsp');
  for (let i = 0; i < 5; i++) await writer.transcriptAppend({ name: 'a', entry: entry(`run2 ${i}`) });
  const back = await server.client('ndjson');
  const inbox = new Inbox(back, ['transcript/didAppend']);
  await back.watchSubscribe({ transcripts: '*', since: { transcripts: { a: 7, ghost: 3 } } });
  const { seq } = await writer.transcriptAppend({ name: 'a', entry: entry('live') });
  await inbox.waitFor((n) => n.params.seq === seq);
  assert.deepEqual(inbox.of('transcript/didAppend').map((p) => (p.entry as { text: string }).text),
    ['run1 8', 'run1 9', ...range(0, 4).map((i) => `run2 ${i}`), 'live']);
});

test('since: a transcript removed and started again while the subscriber was away is sent whole (its seqs began again at 0)', { timeout: TIMEOUT }, async (t) => {
  const server = await startServer(t);
  const writer = await server.client('lsp');
  await writer.sessionAdd({ session: { name: 'a' } });
  for (let i = 0; i < 6; i++) await writer.transcriptAppend({ name: 'a', entry: entry(`first ${i}`) });
  await writer.transcriptRemove({ name: 'a' });
  for (let i = 0; i < 2; i++) assert.equal((await writer.transcriptAppend({ name: 'a', entry: entry(`again ${i}`) })).seq, i);
  const back = await server.client('ndjson');
  const inbox = new Inbox(back, ['transcript/didAppend']);
  // It saw the first file up to seq 5: past the whole of the new one.
  await back.watchSubscribe({ transcripts: ['a'], since: { transcripts: { a: 5 } } });
  const { seq } = await writer.transcriptAppend({ name: 'a', entry: entry('live') });
  await inbox.waitFor((n) => n.params.seq === seq && (n.params.entry as { text: string }).text === 'live');
  assert.deepEqual(inbox.of('transcript/didAppend').map((p) => `${String(p.seq)} ${(p.entry as { text: string }).text}`), ['0 again 0', '1 again 1', '2 live']);
});

test('since: appends committed while the file is read are sent once, from the file, in order', async () => {
  const sent: number[] = [];
  const sink: NotificationSink = { notify: (_m, params) => void sent.push((params as { seq: number }).seq), unsentBytes: () => 0, unsentFrames: () => 0, isClosed: false };
  const entries = (from: number, to: number) => range(from, to).map((i) => entry(`e${i}`));
  let release!: (r: { firstSeq: number; entries: ReturnType<typeof entry>[]; end: number }) => void;
  let reading!: () => void;
  const readBegan = new Promise<void>((resolve) => (reading = resolve));
  // The file: seqs 0..4 when the first read begins; 5 and 6 are committed while it runs.
  let fileEnd = 5;
  const reads: [string, number][] = [];
  const feed = new Subscriptions({}, {
    revision: 0,
    document: () => ({ home: { id: '', type: '' }, sessions: [] }) as unknown as StateDocument,
    entriesFrom: (name, from) => {
      reads.push([name, from]);
      if (reads.length > 1) return Promise.resolve({ firstSeq: from, entries: entries(from, fileEnd - 1), end: fileEnd });
      reading();
      return new Promise((resolve) => (release = resolve));
    },
    error: (message, err) => assert.fail(`${message}: ${String(err)}`),
  });
  feed.subscribe(sink, { transcripts: ['a'], since: { transcripts: { a: 1 } } });
  await readBegan;
  // The seam: seq 5 is committed before the first read ends (its page has it), seq 6 after (its
  // page has not): the next page has it, and neither is sent live as well.
  fileEnd = 6;
  feed.transcriptAppended('a', 5, entry('e5'));
  fileEnd = 7;
  feed.transcriptAppended('a', 6, entry('e6'));
  assert.deepEqual(sent, [], 'live appends wait for the catch-up');
  release({ firstSeq: 2, entries: entries(2, 5), end: 6 });
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(reads, [['a', 2], ['a', 6], ['a', 7]], 'a page from where the last ended, until the file has no more');
  feed.transcriptAppended('a', 7, entry('e7'));
  assert.deepEqual(sent, range(2, 7));
});

test('since: a revision older than the kept history gets state/resync; one within it is replayed', () => {
  const sent: { method: string; params: Record<string, unknown> }[] = [];
  const sink: NotificationSink = { notify: (method, params) => void sent.push({ method, params: params as Record<string, unknown> }), unsentBytes: () => 0, unsentFrames: () => 0, isClosed: false };
  let revision = 0;
  let doc: StateDocument = { home: { id: '', type: '' }, sessions: [] } as unknown as StateDocument;
  const feed = new Subscriptions({}, {
    get revision() {
      return revision;
    },
    document: () => doc,
    entriesFrom: () => Promise.reject(new Error('no transcripts here')),
    error: () => undefined,
  });
  for (let i = 1; i <= MAX_REPLAY_REVISIONS + 10; i++) {
    const after = { ...doc, workspace: `w${i}` } as StateDocument;
    revision = i;
    feed.stateCommitted(i, doc, after);
    doc = after;
  }
  feed.subscribe(sink, { sessions: true, since: { epoch: feed.epoch, revision: 5 } });
  feed.subscribe(sink, { sessions: true, since: { epoch: feed.epoch, revision: revision - 3 } });
  return new Promise<void>((resolve) => setImmediate(() => {
    const methods = sent.map((n) => `${n.method} ${String(n.params.revision)}`);
    assert.deepEqual(methods, [
      `state/resync ${revision}`,
      ...range(revision - 2, revision).map((r) => `state/didChange ${r}`),
    ]);
    resolve();
  }));
});
