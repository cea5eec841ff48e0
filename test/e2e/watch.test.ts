// The change feed over a unix socket, against the in-process server (helpers/server.ts): each
// notification once, in commit order, sent only once its write is in the file; subscribe-then-read
// misses nothing while other connections write; subscriptions end with their connection or
// watch/unsubscribe; a subscriber that stops reading gets watch/overflow instead of slowing
// writers. (The server's memory under a stalled subscriber is measured in
// bench/feed-memory.bench.ts: RSS is a measurement, not a test.)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { connect } from '../../src/client/client.js';
import type { Session, TranscriptEntry } from '../../src/protocol/model.js';
import { MAX_PENDING_BYTES, MAX_PENDING_NOTIFICATIONS } from '../../src/server/feed-limits.js';
import { entry, fileEntries, Inbox, journalFile, TIMEOUT, transcriptFile } from '../helpers/feed.js';
import type { Ctx, InProcessServer, StartOptions } from '../helpers/server.js';
import { closeClean, startServer } from '../helpers/server.js';
import { statePathIn } from '../helpers/temp-dir.js';

interface Appended {
  subscription: string;
  name: string;
  seq: number;
  entry: TranscriptEntry;
}

/** The rows of state.json as the file holds them now. */
const fileSessions = (dir: string): Session[] =>
  (JSON.parse(readFileSync(statePathIn(dir), 'utf8')) as { sessions: Session[] | null }).sessions ?? [];

/** An in-process server, a writer connection (LSP) and a watcher connection (NDJSON). */
async function setup(t: Ctx, feed?: StartOptions['feed']) {
  const server = await startServer(t, feed ? { feed } : {});
  const writer = await server.client('lsp');
  const watcher = await server.client('ndjson');
  return { dir: server.dir, socket: server.socket, server, writer, watcher };
}

/** Stops the server (awaiting the store) and checks it logged nothing at warn or above. */
const stop = (server: InProcessServer): Promise<void> => closeClean(server, 40);

test('transcript/didAppend arrives once per append, in seq order, with its line already in the file', { timeout: TIMEOUT }, async (t) => {
  const { dir, server, writer, watcher } = await setup(t);
  await writer.sessionAdd({ session: { name: 'a' } });
  await writer.sessionAdd({ session: { name: 'b' } });
  const file = transcriptFile(dir, 'a');
  const notInFile: string[] = [];
  const inbox = new Inbox(watcher, ['transcript/didAppend'], (n) => {
    const p = n.params as unknown as Appended;
    // Read the file right when the notification arrives: its line must be there already.
    const line = fileEntries(file)[p.seq];
    if (line?.text !== p.entry.text) notInFile.push(`seq ${p.seq} (${p.entry.text}) arrived, the file has ${JSON.stringify(line)} there`);
  });
  const { subscription } = await watcher.watchSubscribe({ transcripts: ['a'] });

  // 100 pipelined appends to each of two transcripts: the server commits them in several batches.
  const N = 100;
  const sent = Array.from({ length: N }, (_, i) => entry(`e${i}`, { role: i % 2 ? 'assistant' : 'user', cost: i / 1000, tokens_in: i }));
  const replies = await Promise.all(sent.flatMap((e) => [
    writer.transcriptAppend({ name: 'a', entry: e }),
    writer.transcriptAppend({ name: 'b', entry: entry(`other ${e.text}`) }),
  ]));
  assert.deepEqual(replies.filter((_r, i) => i % 2 === 0).map((r) => r.seq), Array.from({ length: N }, (_, i) => i));
  // A last append: everything before it was delivered before its notification, duplicates included.
  const { seq: last } = await writer.transcriptAppend({ name: 'a', entry: entry('last') });
  await inbox.waitFor((n) => n.params.seq === last);

  assert.deepEqual(notInFile, []);
  assert.deepEqual(
    inbox.of('transcript/didAppend'),
    [...sent, entry('last')].map((e, seq) => ({ subscription, name: 'a', seq, entry: e })),
    'each append of a once, in order, none of b',
  );
  await stop(server);
});

test('session/didChange reports added, updated and removed rows with increasing revisions, each after state.json has it', { timeout: TIMEOUT }, async (t) => {
  const { dir, server, writer, watcher } = await setup(t);
  const notInFile: string[] = [];
  const inbox = new Inbox(watcher, ['session/didChange', 'state/didChange'], (n) => {
    if (n.method !== 'session/didChange') return;
    const p = n.params as { kind: string; name: string; session?: Session };
    const row = fileSessions(dir).find((s) => s.name === p.name);
    if (p.kind === 'removed' ? row !== undefined : !isDeepStrictEqual(row, p.session)) {
      notInFile.push(`${p.kind} ${p.name} arrived; state.json has ${JSON.stringify(row)}`);
    }
  });
  const { subscription, revision: start } = await watcher.watchSubscribe({ sessions: true });
  assert.equal((await writer.stateGet()).revision, start, 'state/get reports the revision subscribe returned');

  const { session: a } = await writer.sessionAdd({ session: { name: 'a', cmd: 'claude' } });
  const { session: b } = await writer.sessionAdd({ session: { name: 'b', vendor: 'codex' } });
  assert.deepEqual(await writer.sessionSetResumeToken({ name: 'a', resumeToken: 'r1' }), { found: true, changed: true });
  assert.deepEqual(await writer.sessionSetResumeToken({ name: 'a', resumeToken: 'r1' }), { found: true, changed: false });
  assert.deepEqual(await writer.sessionSetArchived({ name: 'b', archived: true }), { found: true, changed: true });
  assert.deepEqual(await writer.sessionRemove({ name: 'a' }), { removed: true });
  await writer.stateSetWorkspace({ workspace: '/w' });
  await inbox.waitFor((n) => n.method === 'state/didChange');

  assert.deepEqual(notInFile, []);
  const changes = inbox.of('session/didChange');
  assert.deepEqual(changes.map(({ revision: _r, ...rest }) => rest), [
    { subscription, kind: 'added', name: 'a', session: a },
    { subscription, kind: 'added', name: 'b', session: b },
    { subscription, kind: 'updated', name: 'a', session: { ...a, resumeToken: 'r1' } },
    { subscription, kind: 'updated', name: 'b', session: { ...b, archived: true } },
    { subscription, kind: 'removed', name: 'a' },
  ], 'one notification per change, none for the write that changed nothing');
  const revisions = [...changes, ...inbox.of('state/didChange')].map((p) => p.revision as number);
  for (const [i, r] of revisions.entries()) assert.ok(r > (i === 0 ? start : (revisions[i - 1] as number)), `revisions increase: ${revisions.join(', ')} after ${start}`);
  assert.equal((await writer.stateGet()).revision, revisions.at(-1), 'state/get reports the newest revision');
  await stop(server);
});

test('state/didChange names exactly the top-level fields that changed, once each is in state.json', { timeout: TIMEOUT }, async (t) => {
  const { dir, server, writer, watcher } = await setup(t);
  const notInFile: string[] = [];
  const inbox = new Inbox(watcher, ['state/didChange', 'session/didChange'], (n) => {
    if (n.method !== 'state/didChange') return;
    const doc = JSON.parse(readFileSync(statePathIn(dir), 'utf8')) as Record<string, unknown>;
    for (const f of n.params.fields as string[]) if (doc[f] === undefined) notInFile.push(`${f} arrived, state.json lacks it`);
  });
  const { subscription, revision: start } = await watcher.watchSubscribe({ sessions: true });
  await writer.stateSetWorkspace({ workspace: '/w' });
  await writer.stateSetWorkspace({ workspace: '/w' }); // unchanged: no write, no notification
  await writer.stateSetHome({ home: { id: 'h1', type: 'forum' } });
  await writer.sessionAdd({ session: { name: 'a' } }); // a row: session/didChange only
  await writer.stateSetInstanceID({ instanceID: 'i1' });
  await writer.stateSetStatusMessageID({ statusMessageID: 'm1' });
  await writer.stateSetSource({ source: '/src' });
  await inbox.waitFor((n) => n.method === 'state/didChange' && (n.params.fields as string[]).includes('source'));

  assert.deepEqual(notInFile, []);
  const changes = inbox.of('state/didChange');
  assert.deepEqual(changes.map((p) => ({ subscription: p.subscription, fields: p.fields })), [
    { subscription, fields: ['workspace'] },
    { subscription, fields: ['home'] },
    { subscription, fields: ['instanceID'] },
    { subscription, fields: ['statusMessageID'] },
    { subscription, fields: ['source'] },
  ]);
  const all = inbox.notes.map((n) => n.params.revision as number);
  assert.deepEqual(all, [...all].sort((x, y) => x - y), 'in commit order');
  assert.equal(new Set(all).size, all.length, 'one revision per commit');
  assert.ok((all[0] as number) > start);
  await stop(server);
});

test('participants/didAdd arrives once per new id, in order, after the journal has it; a repeated id sends nothing', { timeout: TIMEOUT }, async (t) => {
  const { dir, server, writer, watcher } = await setup(t);
  await writer.sessionAdd({ session: { name: 'a' } });
  await writer.sessionAdd({ session: { name: 'b' } });
  const notInFile: string[] = [];
  const inbox = new Inbox(watcher, ['participants/didAdd'], (n) => {
    const ids = readFileSync(journalFile(dir, n.params.name as string), 'utf8').split('\n');
    if (!ids.includes(n.params.userId as string)) notInFile.push(`${String(n.params.userId)} arrived, the journal lacks it`);
  });
  const { subscription } = await watcher.watchSubscribe({ participants: ['a'] });
  const added = await Promise.all(['u1', 'u2', 'u1', 'u3', 'u2'].map((userId) => writer.participantsAppend({ name: 'a', userId })));
  assert.deepEqual(added.map((r) => r.added), [true, true, false, true, false]);
  await writer.participantsAppend({ name: 'b', userId: 'ub' });
  await writer.participantsAppend({ name: 'a', userId: 'last' });
  await inbox.waitFor((n) => n.params.userId === 'last');

  assert.deepEqual(notInFile, []);
  assert.deepEqual(inbox.of('participants/didAdd'), ['u1', 'u2', 'u3', 'last'].map((userId) => ({ subscription, name: 'a', userId })));
  await stop(server);
});

// ---- subscribe, then read -----------------------------------------------------------------

/**
 * One of the concurrent writers, on its own connection: pipelines N transcript appends (text
 * c<k>-<i>) and N participant ids (p<k>-<i>) without waiting between them, then waits for every
 * reply (what test/fixtures/append-client.mjs does in a process of its own).
 */
async function appendClient(server: InProcessServer, k: number, n: number, name: string): Promise<void> {
  const client = await server.client(k % 2 ? 'ndjson' : 'lsp');
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) {
    pending.push(
      client.transcriptAppend({ name, entry: { ts: '2026-01-01T00:00:00Z', role: 'user', text: `c${k}-${i}` } }),
      client.participantsAppend({ name, userId: `p${k}-${i}` }),
    );
  }
  await Promise.all(pending);
}

test('subscribe then read misses nothing while other connections append: the union, deduplicated by seq and revision, equals the files', { timeout: TIMEOUT }, async (t) => {
  const { dir, server, writer } = await setup(t);
  const NAME = 'crowd';
  await writer.sessionAdd({ session: { name: NAME } });
  // An early subscriber tells us the appends are under way, so the late one subscribes mid-stream.
  const early = await server.client();
  const earlyInbox = new Inbox(early, ['transcript/didAppend']);
  await early.watchSubscribe({ transcripts: [NAME] });

  const CLIENTS = 4;
  // 1 600 appends in all: the late subscriber subscribes after the first 100 (asserted below).
  const N = 400;
  const clients = Array.from({ length: CLIENTS }, (_, k) => appendClient(server, k, N, NAME));
  // Sessions are added from another connection meanwhile.
  const adds = (async () => {
    for (let i = 0; i < 40; i++) await writer.sessionAdd({ session: { name: `s${i}` } });
  })();
  await earlyInbox.waitFor((n) => (n.params.seq as number) >= 100);

  const late = await server.client('ndjson');
  const lateInbox = new Inbox(late, ['transcript/didAppend', 'participants/didAdd', 'session/didChange']);
  await late.watchSubscribe({ sessions: true, transcripts: [NAME], participants: [NAME] });
  const page = await late.transcriptRead({ name: NAME });
  const { userIds } = await late.participantsRead({ name: NAME });
  const { state, revision } = await late.stateGet();
  assert.ok(page.entries.length < CLIENTS * N, 'the late subscriber subscribed while appends were still coming (else this test proves little)');

  await Promise.all([...clients, adds]);
  // Last writes of each kind: once the late subscriber has them, it has everything before them.
  const { seq: lastSeq } = await writer.transcriptAppend({ name: NAME, entry: entry('last') });
  await writer.participantsAppend({ name: NAME, userId: 'last' });
  await writer.sessionAdd({ session: { name: 'last' } });
  await Promise.all([
    lateInbox.waitFor((n) => n.method === 'transcript/didAppend' && n.params.seq === lastSeq),
    lateInbox.waitFor((n) => n.method === 'participants/didAdd' && n.params.userId === 'last'),
    lateInbox.waitFor((n) => n.method === 'session/didChange' && n.params.name === 'last'),
  ]);

  // Transcript: what was read, then each notification not already read (by seq).
  const bySeq = new Map<number, string>(page.entries.map((e, i) => [page.firstSeq + i, e.text]));
  for (const p of lateInbox.of('transcript/didAppend')) {
    const seq = p.seq as number;
    const text = (p.entry as TranscriptEntry).text;
    assert.ok(!bySeq.has(seq) || bySeq.get(seq) === text, `seq ${seq} was read as ${bySeq.get(seq)} and notified as ${text}`);
    bySeq.set(seq, text);
  }
  const inFile = fileEntries(transcriptFile(dir, NAME)).map((e) => e.text);
  assert.equal(inFile.length, CLIENTS * N + 1);
  assert.deepEqual([...bySeq.keys()].sort((x, y) => x - y), inFile.map((_e, i) => i), 'every seq once');
  assert.deepEqual(inFile.map((_e, i) => bySeq.get(i)), inFile, 'read plus notified equals the file');

  // Participants: a set, so the union must equal the journal.
  const ids = new Set([...userIds, ...lateInbox.of('participants/didAdd').map((p) => p.userId as string)]);
  assert.deepEqual([...ids].sort(), readFileSync(journalFile(dir, NAME), 'utf8').split('\n').filter(Boolean).sort());

  // Sessions: the state read at `revision`, then each change with a larger revision.
  const names = new Set((state.sessions ?? []).map((s) => s.name));
  for (const p of lateInbox.of('session/didChange')) {
    if ((p.revision as number) <= revision) continue;
    if (p.kind === 'removed') names.delete(p.name as string);
    else names.add(p.name as string);
  }
  assert.deepEqual([...names].sort(), fileSessions(dir).map((s) => s.name).sort());

  // The early subscriber saw every append once, in file order.
  assert.deepEqual(earlyInbox.of('transcript/didAppend').map((p) => (p.entry as TranscriptEntry).text), inFile);
  await stop(server);
});

// ---- the end of a subscription ------------------------------------------------------------

test('watch/unsubscribe ends one subscription of the connection; another connection cannot end it', { timeout: TIMEOUT }, async (t) => {
  const { server, writer, watcher } = await setup(t);
  await writer.sessionAdd({ session: { name: 'a' } });
  const inbox = new Inbox(watcher, ['transcript/didAppend', 'participants/didAdd']);
  const { subscription: transcripts } = await watcher.watchSubscribe({ transcripts: '*' });
  const { subscription: participants } = await watcher.watchSubscribe({ participants: '*' });
  assert.notEqual(transcripts, participants);

  const other = await server.client();
  assert.deepEqual(await other.watchUnsubscribe({ subscription: transcripts }), { unsubscribed: false }, 'not its subscription');
  await writer.transcriptAppend({ name: 'a', entry: entry('before') });
  await inbox.waitFor((n) => n.method === 'transcript/didAppend');

  assert.deepEqual(await watcher.watchUnsubscribe({ subscription: transcripts }), { unsubscribed: true });
  assert.deepEqual(await watcher.watchUnsubscribe({ subscription: transcripts }), { unsubscribed: false }, 'already ended');
  await writer.transcriptAppend({ name: 'a', entry: entry('after') });
  await writer.participantsAppend({ name: 'a', userId: 'u' });
  await inbox.waitFor((n) => n.method === 'participants/didAdd');

  assert.deepEqual(inbox.notes.map((n) => [n.method, n.params.subscription]), [
    ['transcript/didAppend', transcripts],
    ['participants/didAdd', participants],
  ], 'nothing for the ended subscription, the other one goes on');
  await stop(server);
});

test('a subscriber that hangs up leaves writers and other subscribers unaffected', { timeout: TIMEOUT }, async (t) => {
  const { server, writer, watcher, socket } = await setup(t);
  await writer.sessionAdd({ session: { name: 'a' } });
  for (let i = 0; i < 5; i++) {
    const gone = await connect({ socket });
    await gone.watchSubscribe({ sessions: true, transcripts: '*', participants: '*' });
    await gone.close();
  }
  const inbox = new Inbox(watcher, ['transcript/didAppend']);
  await watcher.watchSubscribe({ transcripts: ['a'] });
  const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => writer.transcriptAppend({ name: 'a', entry: entry(`e${i}`) })));
  await inbox.waitFor((n) => n.params.seq === 99);
  assert.deepEqual(replies.map((r) => r.seq), Array.from({ length: 100 }, (_, i) => i));
  assert.equal(inbox.notes.length, 100);
  await stop(server);
});

test('subscriptions end with their connection (counted)', { timeout: TIMEOUT }, async (t) => {
  const closed: Promise<void>[] = [];
  const srv = await startServer(t, {
    // Registered after the server's own close listener, so this runs once it has cleaned up.
    onConnection: (conn) => closed.push(new Promise((resolve) => conn.onClose(resolve))),
  });
  const { server } = srv;
  const a = await connect({ socket: srv.socket });
  const b = await srv.client();
  await a.watchSubscribe({ sessions: true });
  await a.watchSubscribe({ transcripts: '*' });
  const { subscription: kept } = await b.watchSubscribe({ participants: '*' });
  assert.equal(server.subscriptions.size, 3);

  await a.close();
  await Promise.race(closed);
  assert.equal(server.subscriptions.size, 1, 'the closed connection\'s two subscriptions are gone');
  assert.deepEqual(await b.watchUnsubscribe({ subscription: kept }), { unsubscribed: true }, 'the other connection\'s is not');
  assert.equal(server.subscriptions.size, 0);
});

// ---- a subscriber that stops reading ------------------------------------------------------

/**
 * Texts of 4 KiB, as bench/feed-memory.bench.ts uses: both bounds of the stalled subscriber's
 * queue (frames and bytes) are then reached together, so what it received before its overflow
 * (the server's queue plus what the kernel's socket buffers held) stays within the frame bound.
 * The server runs with bounds 8 times lower than the defaults (512 frames, 2 MiB), so the test
 * moves 6 MB instead of 21 MB; the defaults are checked on the feed alone
 * (test/server/feed-bounds.test.ts).
 */
const TEXT_BYTES = 4096;
/** A socket's default send buffer in bytes (Linux; 208 KiB when unreadable). */
function socketSendBuffer(): number {
  try {
    return Number(readFileSync('/proc/sys/net/core/wmem_default', 'utf8').trim()) || 212_992;
  } catch {
    return 212_992;
  }
}
const PENDING_NOTIFICATIONS = MAX_PENDING_NOTIFICATIONS / 8;
const PENDING_BYTES = MAX_PENDING_BYTES / 8;
/**
 * Notifications that can reach the stalled subscriber beyond the server's queue: what the socket
 * held (its send buffer, at most wmem_default bytes) and the client's last read (64 KiB) when the
 * reader paused. With the old 16 MiB bound its byte limit stopped the queue ~100 frames short of
 * the frame limit and hid that; at 2 MiB the two limits meet and 527 were seen under load.
 */
const IN_FLIGHT = Math.ceil((socketSendBuffer() + 64 * 1024) / TEXT_BYTES);
/**
 * Enough appends to pass the bound: the queue's frames plus twice what the socket can absorb first
 * (~650; was the queue plus a flat 1024). More than the test lets reach the stalled subscriber
 * (the queue plus IN_FLIGHT), so it must have been cut off.
 */
const OVERFLOW_APPENDS = Math.min(PENDING_NOTIFICATIONS, Math.ceil(PENDING_BYTES / TEXT_BYTES)) + 2 * IN_FLIGHT;

test('a subscriber that never reads: the writer finishes, a reading subscriber gets everything, watch/overflow waits for the stalled one', { timeout: TIMEOUT }, async (t) => {
  const { dir, server, writer, watcher } = await setup(t, { pendingNotifications: PENDING_NOTIFICATIONS, pendingBytes: PENDING_BYTES });
  await writer.sessionAdd({ session: { name: 'a' } });

  // The stalled subscriber: a raw connection that subscribes to every transcript, then stops reading.
  const stalled = await server.raw('ndjson');
  const sub = (await stalled.call('watch/subscribe', { transcripts: '*' })) as { subscription: string };
  stalled.socket.pause();

  // A subscriber that keeps reading must get everything (counted, not kept).
  let seen = 0;
  let outOfOrder = '';
  let waiting: { seq: number; resolve(): void } | undefined;
  watcher.onNotification('transcript/didAppend', (p) => {
    const { seq } = p as Appended;
    if (seq !== seen && !outOfOrder) outOfOrder = `expected seq ${seen}, got ${seq}`;
    seen = seq + 1;
    if (waiting && seq >= waiting.seq) waiting.resolve();
  });
  const overflowed: unknown[] = [];
  watcher.onNotification('watch/overflow', (p) => {
    overflowed.push(p);
    waiting?.resolve(); // fail on the assertion below, not on the test's timeout
  });
  await watcher.watchSubscribe({ transcripts: ['a'] });

  const N = OVERFLOW_APPENDS;
  // Appends in flight at once: the reading subscriber may lag by about that many, so a window
  // must stay well below its bound (8 × below, as 500 was against the default 16 MiB), or a
  // loaded machine overflows the reader too.
  const WINDOW = Math.floor(PENDING_BYTES / TEXT_BYTES / 8);
  const text = 'x'.repeat(TEXT_BYTES);
  const seqs: number[] = [];
  for (let from = 0; from < N; from += WINDOW) {
    const batch = Array.from({ length: Math.min(WINDOW, N - from) }, (_, i) => writer.transcriptAppend({ name: 'a', entry: entry(`${from + i}:${text}`) }));
    for (const r of await Promise.all(batch)) seqs.push(r.seq);
  }
  assert.deepEqual(seqs, Array.from({ length: N }, (_, i) => i), 'every append answered, in order');

  // The reading subscriber got every entry, in order, and was never dropped.
  const { seq: last } = await writer.transcriptAppend({ name: 'a', entry: entry('last') });
  if (seen <= last && overflowed.length === 0) await new Promise<void>((resolve) => (waiting = { seq: last, resolve }));
  assert.equal(outOfOrder, '');
  assert.deepEqual(overflowed, []);

  // The stalled one, reading again: a reply comes after every notification queued before it, so
  // once its next request is answered, its overflow (if any was sent) has arrived.
  stalled.socket.resume();
  const { subscription: sentinel } = (await stalled.call('watch/subscribe', { participants: ['a'] })) as { subscription: string };
  assert.deepEqual(stalled.received.filter((m) => m.method === 'watch/overflow').map((m) => m.params), [{ subscription: sub.subscription }]);
  await writer.transcriptAppend({ name: 'a', entry: entry('after') });
  await writer.participantsAppend({ name: 'a', userId: 'u' });
  await stalled.waitFor((m) => m.method === 'participants/didAdd' && (m.params as { subscription: string }).subscription === sentinel);
  const notes = stalled.received.filter((m) => m.method !== undefined);
  const at = notes.findIndex((m) => m.method === 'watch/overflow');
  assert.deepEqual(notes.slice(at + 1).map((m) => m.method), ['participants/didAdd'], 'the overflowed subscription was dropped');
  const delivered = notes.slice(0, at);
  // The bound is on the server's queue; what it had already written sat in the socket (IN_FLIGHT).
  assert.ok(delivered.length <= PENDING_NOTIFICATIONS + IN_FLIGHT, `${delivered.length} notifications reached it, more than ${PENDING_NOTIFICATIONS} queued + ${IN_FLIGHT} in the socket`);
  assert.ok(delivered.length < N, 'the stalled subscriber was cut off before all appends');
  assert.deepEqual(delivered.map((m) => (m.params as Appended).seq), delivered.map((_m, i) => i), 'what it got before the overflow is in order');
  assert.ok(fileEntries(transcriptFile(dir, 'a')).length > 0);
  await stop(server);
});
