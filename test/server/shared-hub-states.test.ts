// SharedHub (src/server/shared-hub.ts) over real stores and stub transports: which unit a
// connection is served by (one per state file however it is named: a linked folder, a folder the
// store made under a link), concurrent first calls sharing one open, a new open of a state that
// waits for its drop to release the locks, a stop that waits for the opens under way, a state
// whose folder goes as it opens (served by a fresh open; refused when that goes too), and what
// the log tells (level, state, error) when a state opens, drops or cannot be opened.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { ErrorCodes } from '../../src/protocol/errors.js';
import type { SharedHubOptions } from '../../src/server/shared-hub.js';
import { SharedHub } from '../../src/server/shared-hub.js';
import type { StoreOptions } from '../../src/store/store.js';
import { Store } from '../../src/store/store.js';
import { request, stubTransport } from '../helpers/stub-transport.js';

const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'shared-hub-states-')));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));
let n = 0;
/** A fresh folder for one test. */
const folder = (): string => {
  const dir = path.join(tmp, `t${n++}`);
  fs.mkdirSync(dir);
  return dir;
};

interface LogLine {
  level: number;
  msg: string;
  state?: string;
  states?: number;
  why?: string;
  code?: number;
  err?: { message?: string };
}
const DEBUG = 20;
const INFO = 30;
const WARN = 40;
const ERROR = 50;

/** A hub over real stores whose opens are counted, with the log's lines and the drops it told; stopped after the test. */
function hub(t: TestContext, o: Partial<SharedHubOptions> = {}, tellDrops = true) {
  const lines: LogLine[] = [];
  const opened: string[] = [];
  const dropped: { statePath: string; why: string }[] = [];
  const h = new SharedHub({
    log: pino({ level: 'debug' }, new Writable({ write: (chunk: Buffer, _e, cb) => (lines.push(JSON.parse(chunk.toString())), cb()) })),
    version: '0.0.0-test',
    defaultState: path.join(folder(), 'default.json'),
    stateIdleMs: 60_000,
    graceMs: 60_000,
    socket: () => undefined,
    ...(tellDrops ? { dropped: (statePath: string, why: string) => void dropped.push({ statePath, why }) } : {}),
    ...o,
    openStore: (statePath, options) => {
      opened.push(statePath);
      return (o.openStore ?? Store.open.bind(Store))(statePath, options);
    },
  });
  t.after(() => h.stop());
  return { h, lines, opened, dropped };
}

/** A new connection naming `state` (initialize's `state`), then `status`; resolves with it once both are answered or it is ended. */
async function statusOf(h: SharedHub, state: string) {
  const s = stubTransport();
  h.accept(s.t);
  s.reader.send(request(1, 'initialize', { state }));
  s.reader.send(request(2, 'status'));
  await s.writes(2);
  return s;
}

/** The result of the answer with `id`, failing the test on an error answer. */
function resultOf(s: ReturnType<typeof stubTransport>, id: number): Record<string, unknown> {
  const a = s.written.find((w) => w.id === id);
  assert.ok(a && a.error === undefined, `answer ${id}: ${JSON.stringify(s.written)}`);
  return a.result as Record<string, unknown>;
}

/** A gate a test opens: `wait` settles once `open` is called. */
function gate() {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

test('a state named through a linked folder is served by the same unit as by its real path', async (t) => {
  const real = folder();
  const link = `${real}-link`;
  fs.symlinkSync(real, link);
  const { h, opened, dropped } = hub(t);
  const a = await statusOf(h, path.join(link, 'state.json'));
  const b = await statusOf(h, path.join(real, 'state.json'));
  assert.equal(resultOf(a, 1).statePath, path.join(real, 'state.json'));
  assert.equal(resultOf(b, 1).statePath, path.join(real, 'state.json'));
  assert.equal(resultOf(b, 2).statesOpen, 1, 'one state open');
  assert.equal(opened.length, 1, 'opened once');
  assert.equal(h.size, 1);
  await h.stop();
  assert.equal(dropped.length, 1);
  assert.match(dropped[0]?.why ?? '', /\w/, 'a stop tells why it drops the state');
});

test('a state whose folder the store made under a linked folder is found again by its real path', async (t) => {
  const real = folder();
  const link = `${real}-link`;
  fs.symlinkSync(real, link);
  const { h, opened } = hub(t);
  // The folder `new` does not exist yet: the first call's key is the path as named.
  const a = await statusOf(h, path.join(link, 'new', 'state.json'));
  assert.equal(resultOf(a, 1).statePath, path.join(real, 'new', 'state.json'));
  const b = await statusOf(h, path.join(real, 'new', 'state.json'));
  assert.equal(resultOf(b, 2).statesOpen, 1, 'the same unit, not a second open meeting the first one\'s lock');
  const c = await statusOf(h, path.join(link, 'new', 'state.json'));
  assert.equal(resultOf(c, 2).statesOpen, 1);
  assert.deepEqual(opened, [path.join(link, 'new', 'state.json')]);
});

test('concurrent first calls on one state share its open; another state opens on its own', async (t) => {
  const dir = folder();
  const { h, opened, lines } = hub(t);
  const [a, b, c] = await Promise.all([
    statusOf(h, path.join(dir, 'one.json')),
    statusOf(h, path.join(dir, 'one.json')),
    statusOf(h, path.join(dir, 'two.json')),
  ]);
  assert.equal(resultOf(a, 1).statePath, path.join(dir, 'one.json'));
  assert.equal(resultOf(b, 1).statePath, path.join(dir, 'one.json'));
  assert.equal(resultOf(c, 1).statePath, path.join(dir, 'two.json'));
  assert.deepEqual([...opened].sort(), [path.join(dir, 'one.json'), path.join(dir, 'two.json')]);
  assert.equal(h.size, 2);
  const told = lines.filter((l) => l.level === INFO && l.states !== undefined && l.why === undefined);
  assert.deepEqual(told.map((l) => l.state).sort(), [path.join(dir, 'one.json'), path.join(dir, 'two.json')], 'each open told at info with its state');
  assert.deepEqual(told.map((l) => l.states), [1, 2], 'and how many are open');
  assert.ok(told.every((l) => /\w/.test(l.msg)), 'in words');
});

test('a call on a state whose drop is under way waits for the drop to release its locks, then opens it again', async (t) => {
  const state = path.join(folder(), 'state.json');
  const closeBegun = gate();
  const closeMay = gate();
  let opens = 0;
  const { h, opened, dropped, lines } = hub(t, {
    stateIdleMs: 1,
    openStore: async (statePath, options) => {
      const store = await Store.open(statePath, options);
      if (opens++ === 0) {
        const close = store.close.bind(store);
        store.close = async () => {
          closeBegun.open();
          await closeMay.wait;
          await close();
        };
      }
      return store;
    },
  });
  const first = await statusOf(h, state);
  assert.equal(resultOf(first, 2).statesOpen, 1);
  first.reader.close();
  // Unused for stateIdleMs: the drop begins and stops at the store's close.
  await closeBegun.wait;
  assert.equal(h.size, 1, 'the unit counts until its store is closed');
  const second = stubTransport();
  h.accept(second.t);
  second.reader.send(request(1, 'initialize', { state }));
  second.reader.send(request(2, 'status'));
  closeMay.open();
  await second.writes(2);
  assert.equal(resultOf(second, 1).statePath, state, 'opened again, not refused as locked');
  assert.equal(resultOf(second, 2).statesOpen, 1);
  assert.equal(opened.length, 2);
  assert.equal(dropped.length, 1);
  assert.deepEqual(dropped[0]?.statePath, state);
  assert.match(dropped[0]?.why ?? '', /\b1 ms\b/, 'dropped as unused for stateIdleMs');
  const told = lines.find((l) => l.why === dropped[0]?.why && l.states !== undefined);
  assert.equal(told?.level, INFO, 'the drop told at info');
  assert.equal(told?.state, state);
  assert.equal(told?.states, 0, 'no state open once it was dropped');
  assert.match(told?.msg ?? '', /\w/);
});

test('a stop waits for the opens under way, drops what they opened and refuses what comes after', async (t) => {
  const state = path.join(folder(), 'state.json');
  const openMay = gate();
  const openBegun = gate();
  const closed: string[] = [];
  const { h } = hub(
    t,
    {
      openStore: async (statePath, options) => {
        openBegun.open();
      await openMay.wait;
        const store = await Store.open(statePath, options);
        const close = store.close.bind(store);
        store.close = async () => {
          await close();
          closed.push(statePath);
        };
        return store;
      },
    },
    false, // and no one asks to be told of drops
  );
  const first = stubTransport();
  h.accept(first.t);
  first.reader.send(request(1, 'initialize', { state }));
  await openBegun.wait;
  const stopped = h.stop();
  const late = stubTransport();
  h.accept(late.t);
  late.reader.send(request(7, 'initialize', { state }));
  openMay.open();
  await stopped;
  assert.deepEqual(closed, [state], 'the store opened while stopping is closed before stop resolves');
  assert.equal(h.size, 0);
  await first.closed;
  await late.closed;
  assert.deepEqual(late.written.map((w) => [w.id, w.error?.code]), [[7, ErrorCodes.ShuttingDown]]);
  assert.match(late.written[0]?.error?.message ?? '', /\w/, 'in words');
});

test('a state that cannot be opened for a reason the store names is told at info with its state and code; an unexpected failure is an error with its cause', async (t) => {
  const dir = folder();
  const { h, lines } = hub(t, {
    openStore: (statePath, options) =>
      statePath.endsWith('broken.json') ? Promise.reject(new Error('the disk is on fire')) : Store.open(statePath, options),
  });
  fs.mkdirSync(path.join(dir, 'folder.json'));
  const named = await statusOf(h, path.join(dir, 'folder.json'));
  const refused = named.written.find((w) => w.id === 1)?.error;
  assert.equal(refused?.code, ErrorCodes.StorageFailure);
  const told = lines.filter((l) => l.state === path.join(dir, 'folder.json') && l.code !== undefined);
  assert.equal(told.length, 1, JSON.stringify(lines));
  assert.equal(told[0]?.level, INFO, 'a state that cannot be opened is no error of the server');
  assert.equal(told[0]?.code, ErrorCodes.StorageFailure);
  assert.match(told[0]?.msg ?? '', /\w/);

  const broken = await statusOf(h, path.join(dir, 'broken.json'));
  assert.equal(broken.written.find((w) => w.id === 1)?.error?.code, ErrorCodes.InternalError);
  const errors = lines.filter((l) => l.level >= ERROR);
  assert.equal(errors.length, 1, JSON.stringify(lines));
  assert.equal(errors[0]?.state, path.join(dir, 'broken.json'));
  assert.equal(errors[0]?.err?.message, 'the disk is on fire');
  assert.match(errors[0]?.msg ?? '', /\w/);
  assert.equal(h.size, 0);
});

test('a stop while an open waits for a drop refuses that open instead of opening the state', async (t) => {
  const state = path.join(folder(), 'state.json');
  const closeBegun = gate();
  const closeMay = gate();
  const { h, opened } = hub(t, {
    stateIdleMs: 1,
    openStore: async (statePath, options) => {
      const store = await Store.open(statePath, options);
      const close = store.close.bind(store);
      store.close = async () => {
        closeBegun.open();
        await closeMay.wait;
        await close();
      };
      return store;
    },
  });
  const first = await statusOf(h, state);
  first.reader.close();
  await closeBegun.wait;
  const second = stubTransport();
  h.accept(second.t);
  second.reader.send(request(1, 'initialize', { state }));
  const stopped = h.stop();
  closeMay.open();
  await stopped;
  await second.closed;
  assert.deepEqual(second.written.map((w) => [w.id, w.error?.code]), [[1, ErrorCodes.ShuttingDown]]);
  assert.match(second.written[0]?.error?.message ?? '', /\w/, 'in words');
  assert.equal(opened.length, 1, 'not opened again');
  assert.equal(h.size, 0);
});

test("the store's warnings and errors reach the log with the state; once its folder is gone its errors are expected and told at debug", async (t) => {
  const state = path.join(folder(), 'state.json');
  let storeOptions: StoreOptions | undefined;
  const gone = gate();
  const { h, lines } = hub(t, {
    openStore: (statePath, options) => {
      storeOptions = options;
      return Store.open(statePath, options);
    },
    dropped: () => gone.open(),
  });
  await statusOf(h, state);
  const complaint = (level: number, message: string): LogLine[] => lines.filter((l) => l.level === level && l.err?.message === message);
  storeOptions?.warn?.('a warning of the store', new Error('w1'));
  storeOptions?.error?.('an error of the store', new Error('e1'));
  assert.deepEqual(complaint(WARN, 'w1').map((l) => [l.state, l.msg]), [[state, 'a warning of the store']]);
  assert.deepEqual(complaint(ERROR, 'e1').map((l) => [l.state, l.msg]), [[state, 'an error of the store']]);

  // The watch's timers do not hold the process (the shared server's socket does): this stands for it.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  fs.rmSync(path.dirname(state), { recursive: true });
  await gone.wait.finally(() => clearInterval(keepAlive));
  storeOptions?.error?.('a file of the store is missing', new Error('e2'));
  assert.deepEqual(complaint(ERROR, 'e2'), [], 'no error');
  assert.deepEqual(complaint(DEBUG, 'e2').map((l) => l.state), [state], 'told at debug');
});

/** A hub whose opens remove the state's folder right after the store opened it, the first `times` times. */
function vanishing(t: TestContext, times: number) {
  let n = 0;
  return hub(t, {
    openStore: async (statePath, options) => {
      fs.mkdirSync(path.dirname(statePath), { recursive: true });
      const store = await Store.open(statePath, options);
      if (n++ < times) fs.rmSync(path.dirname(statePath), { recursive: true });
      return store;
    },
  });
}

test('a state whose folder goes as it opens is dropped at once, and the connection is served by a fresh open', async (t) => {
  const state = path.join(folder(), 'state.json');
  const { h, opened } = vanishing(t, 1);
  const s = await statusOf(h, state);
  assert.equal(resultOf(s, 1).statePath, state);
  assert.equal(resultOf(s, 2).statesOpen, 1);
  assert.equal(opened.length, 2, 'opened again once');
});

test('a state whose folder goes as it opens, twice, refuses the connection', async (t) => {
  const state = path.join(folder(), 'state.json');
  const { h, opened } = vanishing(t, 3);
  const s = await statusOf(h, state);
  await s.closed;
  assert.deepEqual(s.written.map((w) => [w.id, w.error?.code]), [[1, ErrorCodes.InternalError], [2, ErrorCodes.InternalError]]);
  assert.match(s.written[0]?.error?.message ?? '', /\w/, 'in words');
  assert.equal(opened.length, 2, 'two tries');
});
