// A connection's transport over any pair of byte streams (stdio, a unix socket, PassThroughs in
// tests): framing detected from the peer's first byte, bad input answered, limits enforced.
import type { MessageReader, MessageWriter } from 'vscode-jsonrpc/node';
import type { FrameBudget } from './frame-budget.js';
import type { Framing } from './frame-decoder.js';
import { FrameSink } from './frame-sink.js';
import type { ProtocolErrorInfo } from './framed-reader.js';
import { FramedReader } from './framed-reader.js';
import { FramedWriter } from './framed-writer.js';

export type { Framing } from './frame-decoder.js';
export type { ProtocolErrorInfo } from './framed-reader.js';

export interface FramedTransportOptions {
  /** Largest message body accepted; a larger one is answered with -32040 and ends the connection. */
  maxMessageBytes: number;
  /** Where unfinished messages' bytes are counted with other connections' (default: the process's). */
  frameBudget?: FrameBudget;
  /** Framing for writes made before the peer has sent a byte (a client speaking first). */
  initialFraming?: Framing;
  /** Told of every -32700/-32600/-32040 the transport answers, e.g. to log it. */
  onProtocolError?: (info: ProtocolErrorInfo) => void;
  /** Answer bad input with an error response (default true; a client sets false and hangs up). */
  answerBadInput?: boolean;
}

export interface FramedTransport {
  reader: MessageReader;
  writer: MessageWriter;
  /** The framing in use: the peer's, once it has sent a byte; else the one we wrote first in. */
  framing(): Framing | undefined;
  /** Ends this connection: output after what was written, input drained; the reader closes. */
  close(): void;
}

/**
 * Builds a vscode-jsonrpc reader/writer pair over `input`/`output` that speaks LSP framing or
 * NDJSON as the peer does, answers malformed input instead of dropping it, and keeps memory per
 * connection within about maxMessageBytes (docs/limits.md).
 */
export function createFramedTransport(
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
  options: FramedTransportOptions,
): FramedTransport {
  const initialFraming = options.initialFraming ?? 'lsp';
  let wroteFirst = false;
  const framing = (): Framing => {
    if (reader.framing === undefined) wroteFirst = true;
    return reader.framing ?? initialFraming;
  };
  const sink = new FrameSink(output, framing, {
    error: (error) => writer.outputFailed(error),
    close: () => writer.outputClosed(),
    congestion: (congested) => reader.setCongested(congested),
  });
  const reader = new FramedReader(input, sink, options);
  const writer = new FramedWriter(sink, (id) => reader.answered(id));
  return {
    reader,
    writer,
    framing: () => reader.framing ?? (wroteFirst ? initialFraming : undefined),
    close: () => reader.stop(),
  };
}
