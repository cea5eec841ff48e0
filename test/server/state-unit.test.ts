// StateUnit (src/server/state-unit.ts) over a real store and a stub transport: a drop answers the
// requests received, then closes the store, then ends the bound connections; it is told to the
// hub once, at its start, and no connection binds after it; a connection whose client left is
// ended by the unit and forgotten; answers that cannot be sent hold the drop for graceMs only; a
// unit unused for idleMs or whose folder goes drops itself. The log is read as a user reads it:
// the level, the state's folder, the reason and the error, not the words.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import { pino } from 'pino';
import type { Message, MessageWriter } from 'vscode-jsonrpc/node';
import { Emitter } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../../src/protocol/errors.js';
import type { DirWatchIo } from '../../src/server/state-dir-watch.js';
import { StateUnit } from '../../src/server/state-unit.js';
import { Store } from '../../src/store/store.js';
import type { FramedTransport } from '../../src/transport/framing.js';
import { StubReader } from '../helpers/stub-transport.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'state-unit-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/**
 * A transport whose answers and closes go to `events`; `closed` settles on its first close. An
 * `unsent` transport never finishes writing an answer (a client that stopped reading).
 */
function stubTransport(events: string[], unsent = false) {
  const reader = new StubReader();
  const messages: { id?: unknown; result?: Record<string, unknown>; error?: { code: number } }[] = [];
  let onClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (onClosed = resolve));
  const writer: MessageWriter = {
    onError: new Emitter<[Error, Message | undefined, number | undefined]>().event,
    onClose: new Emitter<void>().event,
    write: (m: Message) => {
      messages.push(m as (typeof messages)[number]);
      events.push(`answer ${String((m as { id?: unknown }).id)}`);
      return unsent ? new Promise<void>(() => undefined) : Promise.resolve();
    },
    end: () => undefined,
    dispose: () => undefined,
  };
  const t: FramedTransport = {
    reader,
    writer,
    framing: () => 'ndjson',
    close: () => {
      events.push('transport closed');
      onClosed();
    },
  };
  return { t, reader, closed, messages };
}

interface LogLine {
  msg: string;
  level: number;
  why?: string;
  graceMs?: number;
  err?: { message?: string };
  dir?: string;
  transport?: string;
}

/** pino's levels, as a reader of the log filters them. */
const DEBUG = 20;
const INFO = 30;
const WARN = 40;
const ERROR = 50;

let n = 0;
/**
 * A unit over a fresh store whose close goes to `events` (and fails with `closeFails`), with the
 * log's lines and the drops it told.
 */
async function unit(
  events: string[],
  o: { graceMs?: number; idleMs?: number; closeFails?: Error; dirGone?: boolean; dirWatchIo?: Partial<DirWatchIo> } = {},
) {
  const dir = path.join(tmp, `s${n++}`);
  fs.mkdirSync(dir);
  const store = await Store.open(path.join(dir, 'state.json'));
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    events.push('store closed');
    if (o.closeFails) throw o.closeFails;
  };
  const lines: LogLine[] = [];
  const log = pino({ level: 'debug' }, new Writable({ write: (chunk: Buffer, _e, cb) => (lines.push(JSON.parse(chunk.toString())), cb()) }));
  const drops: { why: string; done: Promise<void> }[] = [];
  let onDrop: () => void = () => undefined;
  const dropBegun = new Promise<void>((resolve) => (onDrop = resolve));
  const u = new StateUnit(store, { dir: o.dirGone ?? false }, {
    log,
    version: '0.0.0-test',
    socket: () => undefined,
    statesOpen: () => 1,
    idleMs: o.idleMs ?? 60_000,
    graceMs: o.graceMs ?? 60_000,
    dropping: (why, done) => {
      drops.push({ why, done });
      onDrop();
    },
    ...(o.dirWatchIo ? { dirWatchIo: o.dirWatchIo } : {}),
  });
  return { u, dir, store, lines, drops, dropBegun };
}

test('a drop answers the requests received, then closes the store, then ends the connections', async () => {
  const events: string[] = [];
  const { u, lines, drops } = await unit(events);
  const s = stubTransport(events);
  assert.ok(u.bind(s.t.reader, s.t));
  s.reader.send({ jsonrpc: '2.0', id: 1, method: 'status' } as Message);
  assert.equal(u.isDropping, false);
  const done = u.drop('test says so');
  assert.equal(u.isDropping, true);
  assert.equal(u.drop('again'), done, 'a second drop is the first one');
  assert.deepEqual(drops.map((d) => d.why), ['test says so'], 'the hub is told once, as the drop begins');
  assert.equal(drops[0]?.done, done);
  assert.equal(u.bind(stubTransport([]).t.reader, stubTransport([]).t), undefined, 'no connection binds once the drop began');
  await done;
  assert.deepEqual(events, ['answer 1', 'store closed', 'transport closed']);
  const begun = lines.find((l) => l.why === 'test says so');
  assert.equal(begun?.level, INFO, 'the drop and its reason are told at info');
  assert.match(begun?.msg ?? '', /\w/, 'in words');
  assert.ok(!lines.some((l) => l.level >= WARN), `no warning: ${JSON.stringify(lines)}`);
  const last = lines.at(-1);
  assert.ok(last !== begun && last?.level === DEBUG && /\w/.test(last.msg), `its end is told at debug: ${JSON.stringify(lines)}`);
});

test('a connection whose client left is answered, ended and forgotten: the drop does not end it again', async () => {
  const events: string[] = [];
  const { u } = await unit(events);
  const s = stubTransport(events);
  assert.ok(u.bind(s.t.reader, s.t));
  s.reader.send({ jsonrpc: '2.0', id: 1, method: 'status' } as Message);
  s.reader.close();
  await s.closed;
  assert.deepEqual(events, ['answer 1', 'transport closed']);
  await u.drop('test says so');
  assert.deepEqual(events, ['answer 1', 'transport closed', 'store closed']);
});

test('a unit whose folder is removed drops itself, and the store\'s complaints about the missing files are not errors', async () => {
  const events: string[] = [];
  const { u, dir, lines, drops, dropBegun } = await unit(events, { closeFails: new Error('ENOENT: the folder is gone') });
  const s = stubTransport(events);
  assert.ok(u.bind(s.t.reader, s.t));
  // The watch's timers do not hold the process (a server's socket does): this stands for it.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  fs.rmSync(dir, { recursive: true });
  await dropBegun.finally(() => clearInterval(keepAlive));
  assert.equal(drops.length, 1);
  await drops[0]?.done;
  assert.deepEqual(events, ['store closed', 'transport closed']);
  assert.deepEqual(lines.filter((l) => l.level >= ERROR), [], 'nothing logged as an error');
  assert.equal(lines.find((l) => l.err?.message === 'ENOENT: the folder is gone')?.level, DEBUG, 'not even the failed close');
});

test('a drop whose answers cannot be sent waits graceMs only: a warning says so, then the store closes and the connections end', async () => {
  const events: string[] = [];
  const { u, lines, drops } = await unit(events, { graceMs: 5 });
  const s = stubTransport(events, true);
  assert.ok(u.bind(s.t.reader, s.t));
  s.reader.send({ jsonrpc: '2.0', id: 1, method: 'status' } as Message);
  await u.drop('test says so');
  assert.equal(drops.length, 1);
  assert.deepEqual(events, ['answer 1', 'store closed', 'transport closed'], 'the answer begun, never finished');
  const warned = lines.filter((l) => l.level === WARN);
  assert.equal(warned.length, 1, JSON.stringify(lines));
  assert.equal(warned[0]?.graceMs, 5, 'the grace it waited');
  assert.match(warned[0]?.msg ?? '', /\w/);
});

test('a unit unused for idleMs drops itself, telling why', async () => {
  const events: string[] = [];
  const { drops, dropBegun } = await unit(events, { idleMs: 3 });
  await dropBegun;
  assert.equal(drops.length, 1);
  assert.match(drops[0]?.why ?? '', /\b3 ms\b/, 'the idle time it waited');
  await drops[0]?.done;
  assert.deepEqual(events, ['store closed']);
});

test("a store that fails to close is an error in the log, with the store's error; the drop ends the connections all the same", async () => {
  const events: string[] = [];
  const { u, lines } = await unit(events, { closeFails: new Error('EIO: the disk went away') });
  const s = stubTransport(events);
  assert.ok(u.bind(s.t.reader, s.t));
  await u.drop('test says so');
  assert.deepEqual(events, ['store closed', 'transport closed']);
  const errors = lines.filter((l) => l.level >= ERROR);
  assert.equal(errors.length, 1, JSON.stringify(lines));
  assert.equal(errors[0]?.err?.message, 'EIO: the disk went away');
  assert.match(errors[0]?.msg ?? '', /\w/);
});

test('a store that fails to close once its folder is gone is no error: told at debug, with its error', async () => {
  const events: string[] = [];
  const { u, lines } = await unit(events, { closeFails: new Error('ENOENT: no such file'), dirGone: true });
  await u.drop('test says so');
  assert.deepEqual(events, ['store closed']);
  assert.deepEqual(lines.filter((l) => l.level >= WARN), [], 'nothing above debug');
  const told = lines.filter((l) => l.err?.message === 'ENOENT: no such file');
  assert.equal(told.length, 1, JSON.stringify(lines));
  assert.equal(told[0]?.level, DEBUG);
  assert.match(told[0]?.msg ?? '', /\w/);
});

test("a unit serves its state: status tells the states open and the version; a client may not shut the shared server down", async () => {
  const events: string[] = [];
  const { u, store, lines } = await unit(events);
  assert.equal(u.statePath, store.statePath);
  const s = stubTransport(events);
  assert.ok(u.bind(s.t.reader, s.t));
  s.reader.send({ jsonrpc: '2.0', id: 1, method: 'status' } as Message);
  s.reader.send({ jsonrpc: '2.0', id: 2, method: 'shutdown' } as Message);
  await u.drop('test says so');
  const status = s.messages.find((m) => m.id === 1)?.result;
  assert.equal(status?.statesOpen, 1);
  assert.equal(status?.version, '0.0.0-test');
  assert.equal(s.messages.find((m) => m.id === 2)?.error?.code, ErrorCodes.InvalidRequest, 'shutdown refused');
  const opened = lines.find((l) => l.transport !== undefined);
  assert.match(opened?.transport ?? '', /\w/, 'the log names the connection\'s transport');
});

test("a folder that cannot be watched is a warning naming the folder and the watch's error; the unit serves on", async () => {
  const events: string[] = [];
  const { u, store, lines } = await unit(events, {
    dirWatchIo: {
      watch: () => {
        throw new Error('ENOSPC: no inotify watches left');
      },
    },
  });
  const warned = lines.filter((l) => l.level === WARN);
  assert.equal(warned.length, 1, JSON.stringify(lines));
  assert.equal(warned[0]?.dir, store.dir);
  assert.equal(warned[0]?.err?.message, 'ENOSPC: no inotify watches left');
  assert.match(warned[0]?.msg ?? '', /\w/);
  assert.equal(u.isDropping, false);
  await u.drop('test says so');
});
