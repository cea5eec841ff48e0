// A raw JSON-RPC client for the e2e tests: it writes exact bytes in either framing (LSP
// `Content-Length` or newline-delimited JSON) over a child's stdio or a unix socket, and parses
// what comes back strictly, so a test sees every byte the server sent, garbage included.
import net from 'node:net';
import { parseExactJson } from '../../src/common/exact-json.js';

export type Framing = 'lsp' | 'ndjson';

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

/** A message as it came off the wire (a response, or a notification from the server). */
export interface Message {
  jsonrpc?: unknown;
  id?: string | number | null;
  method?: string;
  params?: unknown;
  result?: unknown;
  error?: RpcError;
}

/** One message body in the given framing. */
export function frame(framing: Framing, body: string | Buffer): Buffer {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  if (framing === 'ndjson') return Buffer.concat([bytes, Buffer.from('\n')]);
  return Buffer.concat([Buffer.from(`Content-Length: ${bytes.length}\r\n\r\n`, 'ascii'), bytes]);
}

/**
 * Cuts a byte stream into message bodies, refusing anything that is not a well-formed frame of
 * the expected framing: a stray byte is recorded in `garbage`, which the stdout-purity test
 * asserts is empty.
 */
export class FrameParser {
  private buf: Buffer = Buffer.alloc(0);
  /** Bytes that were not part of a frame (with why), in arrival order. */
  readonly garbage: string[] = [];

  constructor(private readonly framing: Framing) {}

  /** Feeds a chunk; returns the bodies it completed. */
  push(chunk: Buffer): Message[] {
    this.buf = Buffer.concat([this.buf, chunk]);
    return this.framing === 'ndjson' ? this.lines() : this.lspFrames();
  }

  /** Bytes received but not yet part of a complete frame. */
  get pending(): number {
    return this.buf.length;
  }

  private lines(): Message[] {
    const out: Message[] = [];
    for (let nl = this.buf.indexOf(0x0a); nl !== -1; nl = this.buf.indexOf(0x0a)) {
      const line = this.buf.subarray(0, nl).toString('utf8');
      this.buf = this.buf.subarray(nl + 1);
      this.parse(line, out);
    }
    return out;
  }

  private lspFrames(): Message[] {
    const out: Message[] = [];
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end === -1) return out;
      const headers = this.buf.subarray(0, end).toString('ascii').split('\r\n');
      let length = -1;
      for (const h of headers) {
        const m = /^([A-Za-z-]+): (.*)$/.exec(h);
        if (!m) {
          this.garbage.push(`not a header line: ${JSON.stringify(h)}`);
          continue;
        }
        if ((m[1] as string).toLowerCase() === 'content-length') length = Number(m[2]);
      }
      if (!Number.isSafeInteger(length) || length < 0) {
        this.garbage.push(`no valid Content-Length in ${JSON.stringify(headers)}`);
        this.buf = this.buf.subarray(end + 4);
        continue;
      }
      if (this.buf.length < end + 4 + length) return out;
      const body = this.buf.subarray(end + 4, end + 4 + length).toString('utf8');
      this.buf = this.buf.subarray(end + 4 + length);
      this.parse(body, out);
    }
  }

  private parse(text: string, out: Message[]): void {
    try {
      const value: unknown = parseExactJson(text);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        this.garbage.push(`not a JSON object: ${text.slice(0, 200)}`);
        return;
      }
      out.push(value as Message);
    } catch {
      this.garbage.push(`not JSON: ${JSON.stringify(text.slice(0, 200))}`);
    }
  }
}

/**
 * One connection: exact bytes out, parsed messages in. Replies are claimed by id; `ended`
 * resolves when the server closes its side (EOF), and every pending wait then rejects, so a
 * crashed or hung-up server fails a test at once instead of at its timeout.
 */
export class RawClient {
  private readonly parser: FrameParser;
  private readonly inbox: Message[] = [];
  private waiters: { match(m: Message): boolean; resolve(m: Message): void; reject(e: Error): void }[] = [];
  private nextId = 1;
  private isEnded = false;
  /** Every message received, in order (including claimed ones). */
  readonly received: Message[] = [];
  /** Resolves when the peer ended its output. */
  readonly ended: Promise<void>;

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly output: NodeJS.WritableStream,
    readonly framing: Framing,
  ) {
    this.parser = new FrameParser(framing);
    let endedResolve!: () => void;
    this.ended = new Promise((r) => (endedResolve = r));
    input.on('data', (chunk: Buffer) => {
      const before = this.parser.garbage.length;
      for (const m of this.parser.push(chunk)) this.deliver(m);
      // Bytes that are not frames mean the stream cannot be trusted: fail every wait at once.
      if (this.parser.garbage.length > before) this.failWaiters();
    });
    const onEnd = (): void => {
      if (this.isEnded) return;
      this.isEnded = true;
      endedResolve();
      this.failWaiters();
    };
    input.on('end', onEnd);
    input.on('close', onEnd);
    input.on('error', () => undefined);
    output.on('error', () => undefined);
  }

  /** Bytes received that were not frames. */
  get garbage(): readonly string[] {
    return this.parser.garbage;
  }

  /** Bytes received that do not (yet) form a complete frame. */
  get unparsedBytes(): number {
    return this.parser.pending;
  }

  get isClosed(): boolean {
    return this.isEnded;
  }

  /** Writes bytes exactly as given (no framing added). */
  writeBytes(bytes: string | Buffer): void {
    this.output.write(bytes);
  }

  /** Writes one body in this connection's framing. */
  sendBody(body: string | Buffer): void {
    this.writeBytes(frame(this.framing, body));
  }

  /** Sends a request and returns its id without waiting. */
  send(method: string, params?: unknown): number {
    const id = this.nextId++;
    this.sendBody(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }));
    return id;
  }

  /** Sends a notification. */
  notify(method: string, params?: unknown): void {
    this.sendBody(JSON.stringify({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }) }));
  }

  /** Waits for the response with this id. */
  response(id: string | number | null): Promise<Message> {
    return this.waitFor((m) => 'id' in m && m.id === id && !('method' in m));
  }

  /** Sends a request and waits for its response (result or error). */
  async request(method: string, params?: unknown): Promise<Message> {
    return this.response(this.send(method, params));
  }

  /** Sends a request and returns its result; throws when the reply is an error. */
  async call(method: string, params?: unknown): Promise<unknown> {
    const reply = await this.request(method, params);
    if (reply.error) throw new Error(`${method} failed: ${JSON.stringify(reply.error)}`);
    return reply.result;
  }

  /** Waits for the first not yet claimed message that matches. */
  waitFor(match: (m: Message) => boolean): Promise<Message> {
    const i = this.inbox.findIndex(match);
    if (i !== -1) return Promise.resolve(this.inbox.splice(i, 1)[0] as Message);
    if (this.isEnded || this.garbage.length > 0) return Promise.reject(this.failure());
    return new Promise((resolve, reject) => this.waiters.push({ match, resolve, reject }));
  }

  /** Ends our side of the stream. */
  end(): void {
    this.output.end();
  }

  private failure(): Error {
    return this.garbage.length > 0
      ? new Error(`the server sent bytes that are not ${this.framing} frames: ${JSON.stringify(this.garbage)}`)
      : new Error('the server closed the connection before the awaited message');
  }

  private failWaiters(): void {
    const waiters = this.waiters.splice(0);
    for (const w of waiters) w.reject(this.failure());
  }

  private deliver(m: Message): void {
    this.received.push(m);
    const i = this.waiters.findIndex((w) => w.match(m));
    if (i === -1) {
      this.inbox.push(m);
      return;
    }
    const [w] = this.waiters.splice(i, 1);
    w?.resolve(m);
  }
}

/** Opens a unix socket connection (rejects when nothing listens there). */
export function openSocket(socketPath: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection(socketPath);
    s.once('connect', () => {
      s.off('error', reject);
      resolve(s);
    });
    s.once('error', reject);
  });
}

/** A RawClient over a fresh connection to `socketPath`; the socket is destroyed when the test ends. */
export async function connectRaw(socketPath: string, framing: Framing, t?: { after(fn: () => void): void }): Promise<RawClient & { socket: net.Socket }> {
  const socket = await openSocket(socketPath);
  t?.after(() => socket.destroy());
  return Object.assign(new RawClient(socket, socket, framing), { socket });
}
