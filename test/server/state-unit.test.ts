// StateUnit (src/server/state-unit.ts) over a real store and a stub transport: a drop answers the
// requests received, then closes the store, then ends the bound connections; it is told to the
// hub once, at its start, and no connection binds after it; a connection whose client left is
// ended by the unit and forgotten.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import { pino } from 'pino';
import type { DataCallback, Disposable, Message, MessageWriter } from 'vscode-jsonrpc/node';
import { AbstractMessageReader, Emitter } from 'vscode-jsonrpc/node';
import { StateUnit } from '../../src/server/state-unit.js';
import { Store } from '../../src/store/store.js';
import type { FramedTransport } from '../../src/transport/framing.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'state-unit-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

class StubReader extends AbstractMessageReader {
  private callback: DataCallback | undefined;
  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    return { dispose: () => (this.callback = undefined) };
  }
  send(m: Message): void {
    this.callback?.(m);
  }
  close(): void {
    this.fireClose();
  }
}

/** A transport whose answers and closes go to `events`; `closed` settles on its first close. */
function stubTransport(events: string[]) {
  const reader = new StubReader();
  let onClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (onClosed = resolve));
  const writer: MessageWriter = {
    onError: new Emitter<[Error, Message | undefined, number | undefined]>().event,
    onClose: new Emitter<void>().event,
    write: (m: Message) => (events.push(`answer ${String((m as { id?: unknown }).id)}`), Promise.resolve()),
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
  return { t, reader, closed };
}

let n = 0;
/** A unit over a fresh store whose close goes to `events`, with the log's lines and the drops it told. */
async function unit(events: string[]) {
  const dir = path.join(tmp, `s${n++}`);
  fs.mkdirSync(dir);
  const store = await Store.open(path.join(dir, 'state.json'));
  const close = store.close.bind(store);
  store.close = async () => {
    await close();
    events.push('store closed');
  };
  const lines: { msg: string; level: number; why?: string }[] = [];
  const log = pino({ level: 'debug' }, new Writable({ write: (chunk: Buffer, _e, cb) => (lines.push(JSON.parse(chunk.toString())), cb()) }));
  const drops: { why: string; done: Promise<void> }[] = [];
  let onDrop: () => void = () => undefined;
  const dropBegun = new Promise<void>((resolve) => (onDrop = resolve));
  const u = new StateUnit(store, { dir: false }, {
    log,
    version: '0.0.0-test',
    socket: () => undefined,
    statesOpen: () => 1,
    idleMs: 60_000,
    graceMs: 60_000,
    dropping: (why, done) => {
      drops.push({ why, done });
      onDrop();
    },
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
  assert.ok(lines.some((l) => l.msg === 'dropping the state' && l.why === 'test says so'));
  assert.ok(!lines.some((l) => l.level >= 40), `no warning: ${JSON.stringify(lines)}`);
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
  const { u, dir, lines, drops, dropBegun } = await unit(events);
  const s = stubTransport(events);
  assert.ok(u.bind(s.t.reader, s.t));
  // The watch's timers do not hold the process (a server's socket does): this stands for it.
  const keepAlive = setInterval(() => undefined, 1 << 30);
  fs.rmSync(dir, { recursive: true });
  await dropBegun.finally(() => clearInterval(keepAlive));
  assert.equal(drops.length, 1);
  await drops[0]?.done;
  assert.deepEqual(events, ['store closed', 'transport closed']);
  assert.deepEqual(lines.filter((l) => l.level >= 50), [], 'nothing logged as an error');
});
