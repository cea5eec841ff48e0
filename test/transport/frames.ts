// Test-side wire helpers: raw frames in, raw frames out, and an echo server on the transport
// under test with a real vscode-jsonrpc connection on top.
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import { createMessageConnection } from 'vscode-jsonrpc/node';
import type { FramedTransport, FramedTransportOptions, Framing, ProtocolErrorInfo } from '../../src/transport/framing.js';
import { createFramedTransport } from '../../src/transport/framing.js';

export interface Reply {
  jsonrpc: string;
  id: string | number | null;
  result?: unknown;
  error?: { code: number; message: string };
  method?: string;
  params?: unknown;
}

/** Test options: a reply that never comes fails the test after 10 s instead of hanging the run. */
export const bounded = { timeout: 10_000 };

export const request = (id: number | string, params: unknown = { n: id }, method = 'echo'): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method, params });

export const ndjson = (...lines: string[]): string => lines.map((l) => `${l}\n`).join('');

export const lsp = (body: string): string => `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

/** Collects the frames a stream carries, parsing either framing; `raw` keeps every byte. */
export class FrameCollector {
  readonly frames: Reply[] = [];
  private buffer = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  private rawChunks: Buffer[] = [];
  /** Bytes that are not frames of the expected framing: the test fails with them. */
  private failure: Error | undefined;
  readonly ended: Promise<void>;

  constructor(
    stream: NodeJS.ReadableStream,
    private readonly framing: Framing,
  ) {
    stream.on('data', (chunk: Buffer) => {
      this.rawChunks.push(chunk);
      this.buffer = Buffer.concat([this.buffer, chunk]);
      try {
        this.parse();
      } catch (err) {
        this.failure ??= err instanceof Error ? err : new Error(String(err));
      }
      for (const w of this.waiters.splice(0)) w();
    });
    this.ended = new Promise((resolve) => {
      stream.once('end', () => resolve());
      stream.once('close', () => resolve());
    });
    void this.ended.then(() => {
      for (const w of this.waiters.splice(0)) w();
    });
  }

  get raw(): string {
    return Buffer.concat(this.rawChunks).toString('utf8');
  }

  /** Waits until `n` frames have arrived (rejects if the stream ends first). */
  async take(n: number): Promise<Reply[]> {
    let ended = false;
    void this.ended.then(() => (ended = true));
    while (this.frames.length < n) {
      if (this.failure) throw new Error(`not a ${this.framing} frame: ${this.failure.message}: ${this.raw.slice(0, 500)}`);
      if (ended) throw new Error(`stream ended after ${this.frames.length} of ${n} frames: ${this.raw.slice(0, 500)}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
      await Promise.resolve();
    }
    return this.frames.slice(0, n);
  }

  byId(id: string | number | null): Reply[] {
    return this.frames.filter((f) => f.id === id);
  }

  private parse(): void {
    for (;;) {
      if (this.framing === 'ndjson') {
        const nl = this.buffer.indexOf(0x0a);
        if (nl === -1) return;
        this.frames.push(JSON.parse(this.buffer.toString('utf8', 0, nl)) as Reply);
        this.buffer = this.buffer.subarray(nl + 1);
      } else {
        const end = this.buffer.indexOf('\r\n\r\n');
        if (end === -1) return;
        const match = /Content-Length: (\d+)/.exec(this.buffer.toString('latin1', 0, end));
        if (!match) throw new Error(`bad header from server: ${this.buffer.toString('latin1', 0, end)}`);
        const length = Number(match[1]);
        if (this.buffer.length < end + 4 + length) return;
        this.frames.push(JSON.parse(this.buffer.toString('utf8', end + 4, end + 4 + length)) as Reply);
        this.buffer = this.buffer.subarray(end + 4 + length);
      }
    }
  }
}

export interface EchoServer {
  transport: FramedTransport;
  connection: MessageConnection;
  protocolErrors: ProtocolErrorInfo[];
  /** Every request the connection's handler saw, in order. */
  handled: unknown[];
  closed: Promise<void>;
}

/** A vscode-jsonrpc connection answering `echo` with its params, over the transport under test. */
export function echoServer(
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
  options: Partial<FramedTransportOptions> = {},
): EchoServer {
  const protocolErrors: ProtocolErrorInfo[] = [];
  const handled: unknown[] = [];
  const transport = createFramedTransport(input, output, {
    maxMessageBytes: 1024 * 1024,
    onProtocolError: (info) => protocolErrors.push(info),
    ...options,
  });
  const connection = createMessageConnection(transport.reader, transport.writer);
  connection.onRequest('echo', (params: unknown) => {
    handled.push(params);
    return params;
  });
  const closed = new Promise<void>((resolve) => connection.onClose(() => resolve()));
  connection.listen();
  return { transport, connection, protocolErrors, handled, closed };
}

/** An in-memory peer: what the test writes reaches the server, what the server writes is collected. */
export function memoryPeer(framing: Framing, options: Partial<FramedTransportOptions> = {}) {
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  const server = echoServer(toServer, fromServer, options);
  const replies = new FrameCollector(fromServer, framing);
  return { toServer, fromServer, server, replies };
}

/** Writes each piece as its own chunk, letting the reader run between them. */
export async function writeInPieces(stream: NodeJS.WritableStream, bytes: Buffer, size = 1): Promise<void> {
  for (let i = 0; i < bytes.length; i += size) {
    stream.write(bytes.subarray(i, i + size));
    await new Promise((resolve) => setImmediate(resolve));
  }
}

export { once };
