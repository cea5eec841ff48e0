// The LSP base protocol, what vscode-jsonrpc speaks: `Content-Length: N\r\n\r\n` then N bytes.
import { stringifyExactJson } from '../common/exact-json.js';
import type { FrameBudget } from './frame-budget.js';
import { overBudget, processFrameBudget } from './frame-budget.js';
import type { FrameDecoder, FrameHandlers } from './frame-decoder.js';
import type { FramingError } from './framing-error.js';
import { tooLarge } from './framing-error.js';
import { MAX_HEADER_BYTES, quote } from './limits.js';

const HEADER_END = Buffer.from('\r\n\r\n', 'latin1');

/** Encodes one message as an LSP frame, the length counted in UTF-8 bytes as the spec requires. */
export function encodeLsp(message: unknown): string {
  return encodeLspFrame(message).frame;
}

/** The LSP frame of one message and its length in bytes (headers are ASCII: one byte each). */
export function encodeLspFrame(message: unknown): { frame: string; bytes: number } {
  const body = stringifyExactJson(message);
  const bodyBytes = Buffer.byteLength(body, 'utf8');
  const header = `Content-Length: ${bodyBytes}\r\n\r\n`;
  return { frame: header + body, bytes: header.length + bodyBytes };
}

const CONTENT_LENGTH = 'Content-Length: ';

/**
 * The value of a block that is just `Content-Length: <digits>` (what vscode-jsonrpc and our
 * clients write), read without splitting it into lines: the general reading below gives the same.
 */
function onlyContentLength(block: string): string | undefined {
  if (block.length === CONTENT_LENGTH.length || !block.startsWith(CONTENT_LENGTH)) return undefined;
  for (let i = CONTENT_LENGTH.length; i < block.length; i++) {
    const c = block.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return undefined;
  }
  return block.slice(CONTENT_LENGTH.length);
}

/**
 * Reads the header block (text between frames, without its `\r\n\r\n`) into the body length,
 * or the reason the stream can no longer be trusted: unlike vscode-jsonrpc, which logs and then
 * desyncs, a bad header ends the connection with an answer.
 */
export function parseHeaderBlock(block: string, maxMessageBytes: number): number | FramingError {
  let length = onlyContentLength(block);
  if (length === undefined) for (const line of block.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon === -1) return tooLarge(`invalid header: a header line must be "Name: value". Got ${quote(line)}`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    // Content-Type is optional and not consulted: bodies are always read as UTF-8, the only
    // charset vscode-jsonrpc's Node runtime writes; invalid UTF-8 is answered with -32700.
    if (name !== 'content-length') continue;
    if (length !== undefined && length !== value) {
      return tooLarge(`invalid header: Content-Length must appear once. Got ${quote(length)} and ${quote(value)}`);
    }
    length = value;
  }
  if (length === undefined) return tooLarge(`invalid header: Content-Length is required. Got ${quote(block)}`);
  if (!/^[0-9]+$/.test(length)) {
    return tooLarge(`invalid header: Content-Length value must be a non-negative integer. Got ${quote(length)}`);
  }
  const bytes = Number(length);
  if (bytes > maxMessageBytes) {
    return tooLarge(`message too large: Content-Length must be at most ${maxMessageBytes}. Got ${length}`);
  }
  return bytes;
}

/**
 * The error for a header line ended by a bare "\n" in `buf[from, to)`, if there is one. Header
 * lines end with "\r\n"; without this a peer taken for LSP that is not (an NDJSON line starting
 * with "c") would wait for a "\r\n\r\n" that never comes, its requests never answered.
 */
function bareLineFeed(buf: Buffer, from: number, to: number): FramingError | undefined {
  for (let i = buf.indexOf(0x0a, from); i !== -1 && i < to; i = buf.indexOf(0x0a, i + 1)) {
    if (i === 0 || buf[i - 1] !== 0x0d) {
      const start = i === 0 ? 0 : Math.max(from, buf.lastIndexOf(0x0a, i - 1) + 1);
      const line = buf.toString('latin1', start, i);
      return tooLarge(`invalid header: a header line must end with "\\r\\n". Got ${quote(line)} and a bare "\\n" (an NDJSON message starts with "{")`);
    }
  }
  return undefined;
}

/**
 * Cuts LSP frames out of a byte stream, holding at most MAX_HEADER_BYTES of header and one body
 * of at most maxMessageBytes, taken from the shared partial-frame budget; a body that arrives
 * whole inside a chunk is not copied (nor counted: it is never held).
 */
export class LspDecoder implements FrameDecoder {
  // A header block split across chunks collects here; fixed size, so no reallocation per byte.
  private readonly header = Buffer.allocUnsafe(MAX_HEADER_BYTES + HEADER_END.length);
  private headerLength = 0;
  /** -1 while reading headers. */
  private bodyLength = -1;
  private body: Buffer | undefined;
  private bodyFilled = 0;
  private stopped = false;

  constructor(
    private readonly maxMessageBytes: number,
    private readonly handlers: FrameHandlers,
    private readonly budget: FrameBudget = processFrameBudget,
  ) {}

  push(chunk: Buffer): void {
    let pos = 0;
    while (!this.stopped && pos < chunk.length) {
      if (this.bodyLength === -1) {
        pos = this.readHeader(chunk, pos);
        continue;
      }
      const missing = this.bodyLength - this.bodyFilled;
      if (this.body === undefined && chunk.length - pos >= missing) {
        const body = chunk.subarray(pos, pos + missing);
        pos += missing;
        this.bodyLength = -1;
        this.handlers.body(body);
        continue;
      }
      if (this.body === undefined) {
        if (!this.budget.take(this.bodyLength)) {
          this.fail(overBudget(this.budget, this.bodyLength));
          return;
        }
        this.body = Buffer.allocUnsafe(this.bodyLength);
      }
      const n = Math.min(missing, chunk.length - pos);
      chunk.copy(this.body, this.bodyFilled, pos, pos + n);
      this.bodyFilled += n;
      pos += n;
      if (this.bodyFilled === this.bodyLength) {
        const body = this.body;
        this.release();
        this.handlers.body(body);
      }
    }
  }

  /** A frame cut short by EOF carries no message to answer; it is dropped with the connection. */
  end(): void {
    this.discard();
  }

  discard(): void {
    this.stopped = true;
    this.release();
  }

  /** Drops the body being filled and gives its bytes back to the budget. */
  private release(): void {
    if (this.body !== undefined) this.budget.give(this.body.length);
    this.body = undefined;
    this.bodyFilled = 0;
    this.bodyLength = -1;
  }

  /** Consumes header bytes from `pos`; returns where reading goes on (chunk.length: need more). */
  private readHeader(chunk: Buffer, pos: number): number {
    if (this.headerLength === 0) {
      const end = chunk.indexOf(HEADER_END, pos);
      const bare = bareLineFeed(chunk, pos, end === -1 ? chunk.length : end);
      if (bare !== undefined) {
        this.fail(bare);
        return chunk.length;
      }
      if (end !== -1 && end - pos <= MAX_HEADER_BYTES) {
        this.headerDone(chunk.toString('latin1', pos, end));
        return end + HEADER_END.length;
      }
      if (end !== -1 || chunk.length - pos > this.header.length) {
        this.fail(this.headerTooLong());
        return chunk.length;
      }
      chunk.copy(this.header, 0, pos);
      this.headerLength = chunk.length - pos;
      return chunk.length;
    }
    const before = this.headerLength;
    const n = Math.min(chunk.length - pos, this.header.length - before);
    chunk.copy(this.header, before, pos, pos + n);
    this.headerLength += n;
    // The terminator may straddle the chunk boundary: look from 3 bytes before the new ones.
    const end = this.header.subarray(0, this.headerLength).indexOf(HEADER_END, Math.max(0, before - 3));
    const bare = bareLineFeed(this.header, Math.max(0, before - 1), end === -1 ? this.headerLength : end);
    if (bare !== undefined) {
      this.fail(bare);
      return chunk.length;
    }
    if (end === -1) {
      if (this.headerLength === this.header.length) this.fail(this.headerTooLong());
      return pos + n;
    }
    this.headerLength = 0;
    this.headerDone(this.header.toString('latin1', 0, end));
    return pos + (end + HEADER_END.length - before);
  }

  private headerDone(block: string): void {
    const length = parseHeaderBlock(block, this.maxMessageBytes);
    if (typeof length !== 'number') {
      this.fail(length);
      return;
    }
    if (length === 0) {
      this.handlers.body(Buffer.alloc(0));
      return;
    }
    this.bodyLength = length;
  }

  private headerTooLong(): FramingError {
    return tooLarge(`invalid header: a header block must end with "\\r\\n\\r\\n" within ${MAX_HEADER_BYTES} bytes. Got more than that without it`);
  }

  private fail(error: FramingError): void {
    this.stopped = true;
    this.release();
    this.handlers.fatal(error);
  }
}

