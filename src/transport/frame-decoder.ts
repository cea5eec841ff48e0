// What both framings share: how a connection's framing is chosen, and the shape of a decoder
// that turns a byte stream into message bodies.
import type { FramingError } from './framing-error.js';

export type Framing = 'lsp' | 'ndjson';

/** Receives what a decoder finds; `fatal` is called at most once and nothing follows it. */
export interface FrameHandlers {
  /** One complete message body, not yet decoded; may share memory with the input chunk. */
  body(bytes: Buffer): void;
  fatal(error: FramingError): void;
}

/** Cuts a byte stream into message bodies; chunks may split a message anywhere. */
export interface FrameDecoder {
  push(chunk: Buffer): void;
  /** The input ended: a complete-but-unterminated last message may still be delivered. */
  end(): void;
  /** The connection is closing: what is held is dropped and its budget given back. */
  discard(): void;
}

/** JSON's insignificant whitespace: skipped before detection and on blank NDJSON lines. */
export function isJsonWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;
}

/**
 * Picks the framing from a connection's first non-whitespace byte, so one socket serves
 * Herrscher's NDJSON bridges and vscode-jsonrpc's Content-Length clients alike.
 * Anything that is neither `C` nor JSON is read as NDJSON, so the garbage line gets a -32700
 * answer instead of being mistaken for a header.
 */
export function detectFraming(firstByte: number): Framing {
  return firstByte === 0x43 /* C */ || firstByte === 0x63 /* c */ ? 'lsp' : 'ndjson';
}
