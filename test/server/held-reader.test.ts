// HeldReader (src/server/held-reader.ts), alone over a stub reader: messages that come before
// anyone listens are held and peeked, handed over in order when someone listens, then passed
// straight on; a close seen while held follows the held messages; errors and partial messages
// pass at once; dispose lets go of the inner reader.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DataCallback, Disposable, Message, PartialMessageInfo } from 'vscode-jsonrpc/node';
import { AbstractMessageReader } from 'vscode-jsonrpc/node';
import { HeldReader } from '../../src/server/held-reader.js';

/** A reader the test drives: `send`, `close`, `error`, `partial`; counts its listeners and disposals. */
class StubReader extends AbstractMessageReader {
  private callback: DataCallback | undefined;
  disposed = 0;
  listening = 0;
  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    this.listening++;
    return { dispose: () => ((this.callback = undefined), this.listening--) };
  }
  send(m: Message): void {
    this.callback?.(m);
  }
  close(): void {
    this.fireClose();
  }
  error(err: Error): void {
    this.fireError(err);
  }
  partial(info: PartialMessageInfo): void {
    this.firePartialMessage(info);
  }
  override dispose(): void {
    this.disposed++;
    super.dispose();
  }
}

const req = (id: number): Message => ({ jsonrpc: '2.0', id, method: 'm' }) as Message;
/** A request's id (every message here is a request). */
const idOf = (m: Message): number => (m as unknown as { id: number }).id;

function held() {
  const inner = new StubReader();
  const peeked: Message[] = [];
  const reader = new HeldReader(inner, (m) => peeked.push(m));
  const got: Message[] = [];
  const events: string[] = [];
  reader.onClose(() => events.push('close'));
  reader.onError((e) => events.push(`error ${e.message}`));
  reader.onPartialMessage((i) => events.push(`partial ${i.waitingTime}`));
  const listen = () => reader.listen((m) => (got.push(m), events.push(`message ${idOf(m)}`)));
  return { inner, reader, peeked, got, events, listen };
}

test('messages before a listener are held and peeked, then handed over in order, then passed straight on', () => {
  const h = held();
  assert.equal(h.inner.listening, 1, 'the inner reader is read at once');
  h.inner.send(req(1));
  h.inner.send(req(2));
  assert.equal(h.reader.heldCount, 2);
  assert.deepEqual(h.peeked.map((m) => idOf(m)), [1, 2]);
  assert.deepEqual(h.got, []);
  h.listen();
  assert.deepEqual(h.events, ['message 1', 'message 2']);
  assert.equal(h.reader.heldCount, 0);
  h.inner.send(req(3));
  assert.deepEqual(h.events, ['message 1', 'message 2', 'message 3']);
  assert.equal(h.reader.heldCount, 0, 'a message after the listener is not held');
  assert.equal(h.peeked.length, 2, 'nor peeked');
});

test('takeHeld takes the held messages out: a listener after it gets only later ones', () => {
  const h = held();
  h.inner.send(req(1));
  h.inner.send(req(2));
  assert.deepEqual(h.reader.takeHeld().map((m) => idOf(m)), [1, 2]);
  assert.equal(h.reader.heldCount, 0);
  assert.deepEqual(h.reader.takeHeld(), []);
  h.listen();
  h.inner.send(req(3));
  assert.deepEqual(h.events, ['message 3']);
});

test('a close while held follows the held messages, once; a close after the listener is passed at once', () => {
  const h = held();
  h.inner.send(req(1));
  h.inner.close();
  assert.deepEqual(h.events, [], 'not before someone listens');
  h.listen();
  assert.deepEqual(h.events, ['message 1', 'close']);
  const l2 = held();
  l2.listen();
  l2.inner.close();
  assert.deepEqual(l2.events, ['close']);
  // A second listener on a reader whose held close was delivered is not told it again.
  const l3 = held();
  l3.inner.close();
  l3.listen().dispose();
  l3.listen();
  assert.deepEqual(l3.events, ['close']);
});

test('errors and partial messages pass at once, held or not', () => {
  const h = held();
  h.inner.error(new Error('boom'));
  h.inner.partial({ messageToken: 1, waitingTime: 7 });
  assert.deepEqual(h.events, ['error boom', 'partial 7']);
});

test("the listener's disposable stops the delivery: later messages are held and peeked again", () => {
  const h = held();
  const sub = h.listen();
  h.inner.send(req(1));
  sub.dispose();
  h.inner.send(req(2));
  assert.deepEqual(h.events, ['message 1']);
  assert.equal(h.reader.heldCount, 1);
  assert.deepEqual(h.peeked.map((m) => idOf(m)), [2]);
  h.inner.close();
  assert.deepEqual(h.events, ['message 1'], 'a close with no listener waits for the next');
});

test('dispose lets go of the inner reader and disposes it', () => {
  const h = held();
  h.listen();
  h.reader.dispose();
  assert.equal(h.inner.listening, 0, 'no longer listening to it');
  assert.equal(h.inner.disposed, 1);
  h.inner.send(req(1));
  h.inner.close();
  h.inner.error(new Error('late'));
  h.inner.partial({ messageToken: 2, waitingTime: 1 });
  assert.deepEqual(h.events, [], 'nothing from the inner reader reaches after dispose');
});
