// The output side: order, framing choice, backpressure and closing.
import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { test } from 'node:test';
import { createFramedTransport } from '../../src/transport/framing.js';
import { bounded, echoServer, FrameCollector, ndjson, request } from './frames.js';

const note = (n: number) => ({ jsonrpc: '2.0', method: 'note', params: { n } });

test('writes leave in the order they were made, without awaiting each', bounded, async () => {
  const output = new PassThrough();
  const t = createFramedTransport(new PassThrough(), output, { maxMessageBytes: 1000, initialFraming: 'ndjson' });
  const frames = new FrameCollector(output, 'ndjson');
  const writes = Array.from({ length: 1000 }, (_, i) => t.writer.write(note(i)));
  await Promise.all(writes);
  const got = await frames.take(1000);
  assert.deepEqual(got.map((f) => (f.params as { n: number }).n), Array.from({ length: 1000 }, (_, i) => i));
  t.close();
});

test('a transport that writes before reading uses LSP framing by default', bounded, async () => {
  const output = new PassThrough();
  const t = createFramedTransport(new PassThrough(), output, { maxMessageBytes: 1000 });
  assert.equal(t.framing(), undefined);
  const frames = new FrameCollector(output, 'lsp');
  await t.writer.write(note(1));
  assert.match(frames.raw, /^Content-Length: \d+\r\n\r\n/);
  assert.equal(t.framing(), 'lsp');
  t.close();
});

test('initialFraming ndjson makes a client write NDJSON before the peer spoke', bounded, async () => {
  const output = new PassThrough();
  const t = createFramedTransport(new PassThrough(), output, { maxMessageBytes: 1000, initialFraming: 'ndjson' });
  const frames = new FrameCollector(output, 'ndjson');
  await t.writer.write(note(1));
  assert.equal(frames.raw, '{"jsonrpc":"2.0","method":"note","params":{"n":1}}\n');
  assert.equal(t.framing(), 'ndjson');
  t.close();
});

test('a slow output pauses reading requests until it drains, and no reply is lost', bounded, async () => {
  const input = new PassThrough();
  const held: (() => void)[] = [];
  const written: string[] = [];
  const output = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _enc, callback) {
      written.push(chunk.toString());
      held.push(() => callback());
    },
  });
  const server = echoServer(input, output);
  input.write(ndjson(request(1)));
  while (written.length === 0) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(input.isPaused(), true, 'input paused while the reply is unflushed');

  input.write(ndjson(request(2)));
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(server.handled, [{ n: 1 }], 'the second request waits while the output is congested');

  while (written.length < 2) {
    held.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.deepEqual(server.handled, [{ n: 1 }, { n: 2 }]);
  assert.deepEqual(written.map((w) => (JSON.parse(w) as { id: number }).id), [1, 2]);
  for (const release of held.splice(0)) release();
  server.connection.dispose();
});

test('close() flushes what was written, ends the output and closes the reader', bounded, async () => {
  const input = new PassThrough();
  const output = new PassThrough();
  const t = createFramedTransport(input, output, { maxMessageBytes: 1000, initialFraming: 'ndjson' });
  const frames = new FrameCollector(output, 'ndjson');
  let closed = false;
  t.reader.onClose(() => (closed = true));
  t.reader.listen(() => undefined);
  const pending = t.writer.write(note(1));
  t.close();
  await pending;
  await frames.ended;
  assert.equal(frames.frames.length, 1);
  assert.equal(closed, true);
});

test('a write after close() is rejected, not silently dropped', bounded, async () => {
  const t = createFramedTransport(new PassThrough(), new PassThrough(), { maxMessageBytes: 1000 });
  const errors: Error[] = [];
  t.writer.onError(([err]) => errors.push(err));
  t.close();
  await assert.rejects(t.writer.write(note(1)), /the connection is closed/);
  assert.equal(errors.length, 1);
});

test('the writer answers in the framing the peer used, whatever initialFraming says', bounded, async () => {
  const input = new PassThrough();
  const output = new PassThrough();
  const server = echoServer(input, output, { initialFraming: 'lsp' });
  const frames = new FrameCollector(output, 'ndjson');
  input.write(ndjson(request(1)));
  const [reply] = await frames.take(1);
  assert.equal(reply?.id, 1);
  assert.equal(server.transport.framing(), 'ndjson');
  server.connection.dispose();
});

/** A Writable that records each write(2)-sized call it gets: a lone chunk, or a corked batch. */
function recordingOutput(): { output: Writable; calls: string[][] } {
  const calls: string[][] = [];
  const output = new Writable({
    write(chunk: Buffer, _enc, done) {
      calls.push([chunk.toString()]);
      done();
    },
    writev(chunks, done) {
      calls.push(chunks.map((c) => (c.chunk as Buffer).toString()));
      done();
    },
  });
  return { output, calls };
}

test('frames written in one turn, a few promise steps apart, go out in one write; a later turn gets its own', bounded, async () => {
  const { output, calls } = recordingOutput();
  const t = createFramedTransport(new PassThrough(), output, { maxMessageBytes: 1000, initialFraming: 'ndjson' });
  // As a commit's notification and then the reply: both written from promise steps of one turn.
  await Promise.resolve().then(async () => {
    const first = t.writer.write(note(1));
    await Promise.resolve();
    await Promise.resolve();
    const second = t.writer.write(note(2));
    await Promise.all([first, second]);
  });
  assert.equal(calls.length, 1, `one write for the turn: ${JSON.stringify(calls)}`);
  assert.deepEqual(calls[0]?.map((c) => (JSON.parse(c) as { params: { n: number } }).params.n), [1, 2]);
  await new Promise((r) => setImmediate(r));
  await t.writer.write(note(3));
  assert.equal(calls.length, 2, 'the next turn is written on its own, not held');
  assert.deepEqual(calls.flat().map((c) => (JSON.parse(c) as { params: { n: number } }).params.n), [1, 2, 3]);
  t.close();
});
