// The TypeScript client across a server restart: with `reconnect`, a writer's calls wait for the
// new server and a subscriber's handlers keep receiving under the same subscription id, caught
// up with `since`; the subscriber sees every acknowledged append exactly once, in order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ConnectionState } from '../../src/client/index.js';
import { ConnectionClosedError, connect } from '../../src/client/index.js';
import { entry, TIMEOUT } from '../helpers/feed.js';
import type { Ctx } from '../helpers/server.js';
import { startServer } from '../helpers/server.js';

const fast = { initialDelayMs: 20, maxDelayMs: 200 };

/**
 * The Service `serve` runs, in process, on a socket in a fresh dir: `stop()` is its ordered stop
 * (as on SIGTERM: the answers owed are given, the connections end, the socket goes), `start()`
 * serves the same dir on the same socket again. The client's side of a restart is the subject.
 */
async function realServer(t: Ctx) {
  let current = await startServer(t);
  const { dir, socket } = current;
  return {
    socket,
    stop: () => current.close(),
    start: async () => {
      current = await startServer(t, { dir });
    },
    /** Serves the same dir on a socket the clients do not dial: what is done there is done while they are away. */
    startAway: async (): Promise<string> => {
      current = await startServer(t, { dir, socket: `${dir}/away.sock` });
      return current.socket;
    },
  };
}

/** Resolves once `client` tells `state`. */
const told = (client: { onConnectionState(l: (s: ConnectionState) => void): unknown }, state: ConnectionState['state']): Promise<void> =>
  new Promise((resolve) => void client.onConnectionState((s) => s.state === state && resolve()));

test('a writer and a subscriber ride over a server restart: every acknowledged append seen once, in order', { timeout: TIMEOUT }, async (t) => {
  const server = await realServer(t);
  const { socket } = server;
  const setup = await connect({ socket });
  t.after(() => setup.close());
  await setup.sessionAdd({ session: { name: 'a' } });
  for (let i = 0; i < 5; i++) await setup.transcriptAppend({ name: 'a', entry: entry(`early${i}`) });

  const writer = await connect({ socket, reconnect: fast, callTimeoutMs: 30_000 });
  const subscriber = await connect({ socket, reconnect: fast });
  t.after(() => writer.close());
  t.after(() => subscriber.close());
  const states: ConnectionState['state'][] = [];
  subscriber.onConnectionState((s) => states.push(s.state));
  const seen: number[] = [];
  const ids = new Set<string>();
  const sessionsSeen: string[] = [];
  /** Called after each notification: the wait for the last acknowledged seq below. */
  let afterNotification = (): void => undefined;
  subscriber.onNotification('transcript/didAppend', (n) => {
    seen.push(n.seq);
    ids.add(n.subscription);
    afterNotification();
  });
  subscriber.onNotification('state/resync', (n) => sessionsSeen.push(...(n.state.sessions ?? []).map((s) => s.name)));
  const sub = await subscriber.watchSubscribe({ transcripts: ['a'], sessions: true });

  const acked: number[] = [];
  let lost = 0;
  const append = async (text: string): Promise<void> => {
    try {
      acked.push((await writer.transcriptAppend({ name: 'a', entry: entry(text) })).seq);
    } catch (err) {
      // In flight when the connection went: it may or may not be in the file; not acknowledged.
      assert.ok(err instanceof ConnectionClosedError, String(err));
      lost++;
    }
  };
  for (let i = 0; i < 40; i++) await append(`before${i}`);
  // The restart, with appends in flight; more made once the writer knows the server is gone,
  // which wait for the next one.
  const writerLost = told(writer, 'lost');
  const inFlight = Array.from({ length: 10 }, (_, i) => append(`racing${i}`));
  await server.stop();
  await writerLost;
  const during = Array.from({ length: 10 }, (_, i) => append(`waiting${i}`));
  await server.start();
  await Promise.all([...inFlight, ...during]);
  for (let i = 0; i < 40; i++) await append(`after${i}`);
  const last = acked[acked.length - 1]!;
  await new Promise<void>((resolve) => {
    afterNotification = () => void (seen.includes(last) && resolve());
    afterNotification();
  });

  assert.ok(acked.length >= 90, `acknowledged ${acked.length}, lost ${lost}`);
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i]! > seen[i - 1]!, `seq ${seen[i]} after ${seen[i - 1]}: out of order or duplicate`);
  const missing = acked.filter((s) => !seen.includes(s));
  assert.deepEqual(missing, [], 'every acknowledged append was seen');
  assert.deepEqual([...ids], [sub.subscription], 'one subscription id throughout');
  assert.ok(states.includes('lost') && states.includes('restored'), `states: ${states.join(', ')}`);
  assert.deepEqual(sessionsSeen, ['a'], 'the new run sent state/resync once');
  assert.equal(subscriber.closed, undefined);
});

test('without reconnect, a lost connection closes the client: calls fail at once with ConnectionClosedError', { timeout: TIMEOUT }, async (t) => {
  const server = await realServer(t);
  const client = await connect({ socket: server.socket });
  t.after(() => client.close());
  const states: ConnectionState['state'][] = [];
  client.onConnectionState((s) => states.push(s.state));
  await client.sessionList();
  const closed = told(client, 'closed');
  await server.stop();
  await closed;
  await assert.rejects(client.sessionList(), ConnectionClosedError);
  assert.deepEqual(states, ['closed']);
});

test('reconnect with maxAttempts gives up when no server comes back: waiting calls fail, closed is set', { timeout: TIMEOUT }, async (t) => {
  const server = await realServer(t);
  const client = await connect({ socket: server.socket, reconnect: { initialDelayMs: 10, maxDelayMs: 20, maxAttempts: 3 } });
  t.after(() => client.close());
  const lost = new Promise<void>((resolve) => client.onConnectionState((s) => s.state === 'lost' && resolve()));
  await client.sessionList();
  await server.stop();
  // The call waits for a server that does not come back: made once the client knows the
  // connection is gone (a call racing the close itself fails on the dead socket instead).
  await lost;
  await assert.rejects(client.sessionList(), (err: unknown) => err instanceof ConnectionClosedError && /did not come back/.test(err.message));
  assert.ok(client.closed instanceof Error);
});

// What a subscriber had not seen a notification of when the server went: a session it named that
// did not exist yet, or (with "*") any session at all. Entries appended to those after the
// restart and before it subscribes again were never sent: its `since` did not name them.
for (const filter of [['c'], '*'] as const) {
  test(`transcripts ${JSON.stringify(filter)}: entries of a session the subscriber saw nothing of, appended after a restart before it came back, are delivered`, { timeout: TIMEOUT }, async (t) => {
    const server = await realServer(t);
    const { socket } = server;
    const setup = await connect({ socket });
    t.after(() => setup.close());
    await setup.sessionAdd({ session: { name: 'old' } });
    for (let i = 0; i < 3; i++) await setup.transcriptAppend({ name: 'old', entry: entry(`before${i}`) });
    const subscriber = await connect({ socket, reconnect: fast });
    t.after(() => subscriber.close());
    const seen: string[] = [];
    let sawAfter!: () => void;
    const after = new Promise<void>((resolve) => (sawAfter = resolve));
    subscriber.onNotification('transcript/didAppend', (n) => {
      seen.push(`${n.name}#${n.seq}:${n.entry.text}`);
      if (n.entry.text === 'after') sawAfter();
    });
    const lost = told(subscriber, 'lost');
    const restored = told(subscriber, 'restored');
    await subscriber.watchSubscribe({ transcripts: filter === '*' ? '*' : [...filter] });
    await server.stop();
    await lost;
    // The writes while it is away, on a run it does not dial; then the run it comes back to.
    const away = await connect({ socket: await server.startAway() });
    await away.sessionAdd({ session: { name: 'c' } });
    await away.transcriptAppend({ name: 'c', entry: entry('while-away') });
    if (filter === '*') await away.transcriptAppend({ name: 'old', entry: entry('old-while-away') });
    await away.close();
    await server.stop();
    await server.start();
    await restored;
    const writer = await connect({ socket });
    t.after(() => writer.close());
    await writer.transcriptAppend({ name: 'c', entry: entry('after') });
    await after;
    const want = filter === '*' ? ['c#0:while-away', 'old#3:old-while-away', 'c#1:after'] : ['c#0:while-away', 'c#1:after'];
    assert.deepEqual(seen.sort(), want.sort(), 'each entry once, none before the subscription');
  });
}
