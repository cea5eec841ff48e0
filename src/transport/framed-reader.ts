// The MessageReader half of a framed transport: detects the framing, decodes frames, answers
// what is not a JSON-RPC message, and hands the rest to vscode-jsonrpc.
//
// 'vscode-jsonrpc/node', not 'vscode-jsonrpc': it re-exports the same classes and, on import,
// installs the Node runtime layer (timers) that createMessageConnection needs, so a connection
// built on this transport works whichever of the two entry points its author imported.
import { AbstractMessageReader, Disposable } from 'vscode-jsonrpc/node';
import type { DataCallback } from 'vscode-jsonrpc/node';
import type { FrameDecoder, FrameHandlers, Framing } from './frame-decoder.js';
import { detectFraming, isJsonWhitespace } from './frame-decoder.js';
import type { FrameSink } from './frame-sink.js';
import { errorResponse, FramingError } from './framing-error.js';
import { CLOSE_LINGER_MS } from './limits.js';
import { LspDecoder } from './lsp-framing.js';
import { checkFrame } from './message-check.js';
import { NdjsonDecoder } from './ndjson.js';

export interface ProtocolErrorInfo {
  code: number;
  message: string;
}

export interface FramedReaderOptions {
  maxMessageBytes: number;
  onProtocolError?: (info: ProtocolErrorInfo) => void;
}

type ReaderState = 'new' | 'listening' | 'stopped';

/**
 * Reads JSON-RPC messages in whichever framing the peer's first byte announces. Bad input is
 * answered through the sink; -32040 and `stop()` end the connection: the output is ended after
 * what was written, the input is drained and discarded (see CLOSE_LINGER_MS), close fires once.
 */
export class FramedReader extends AbstractMessageReader {
  private state: ReaderState = 'new';
  private detected: Framing | undefined;
  private decoder: FrameDecoder | undefined;
  private callback: DataCallback | undefined;
  private closeFired = false;
  private readonly handlers: FrameHandlers = {
    body: (bytes) => this.onBody(bytes),
    fatal: (error) => this.onFatal(error),
  };

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly sink: FrameSink,
    private readonly options: FramedReaderOptions,
  ) {
    super();
    if (!(options.maxMessageBytes > 0)) throw new RangeError(`maxMessageBytes must be a positive number. Got ${options.maxMessageBytes}`);
  }

  /** The framing the peer's first byte chose; undefined until it spoke. */
  get framing(): Framing | undefined {
    return this.detected;
  }

  listen(callback: DataCallback): Disposable {
    if (this.state !== 'new') throw new Error('FramedReader.listen may be called once, before the reader stops');
    this.state = 'listening';
    this.callback = callback;
    this.input.on('data', this.onData);
    this.input.on('end', this.onEnd);
    this.input.on('close', this.onEnd);
    this.input.on('error', this.onInputError);
    return Disposable.create(() => {
      this.callback = undefined;
    });
  }

  /** Ends the connection from our side: the output after what was written, then the input. */
  stop(): void {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    this.sink.end();
    this.input.removeListener('data', this.onData);
    this.linger();
    this.fireCloseOnce();
  }

  /** Releases listeners but, as MessageReader promises, neither ends nor destroys the stream. */
  override dispose(): void {
    this.callback = undefined;
    this.input.removeListener('data', this.onData);
    this.input.removeListener('end', this.onEnd);
    this.input.removeListener('close', this.onEnd);
    // An error on a stream nobody listens to would crash the process: keep swallowing them.
    this.input.removeListener('error', this.onInputError);
    this.input.on('error', ignore);
    super.dispose();
  }

  /** Pauses reading while the output is congested, so a peer that does not read its answers
   *  cannot make us buffer an unbounded number of them. */
  setCongested(congested: boolean): void {
    if (this.state !== 'listening') return;
    if (congested) this.input.pause();
    else this.input.resume();
  }

  private readonly onData = (chunk: Buffer | string): void => {
    if (this.state !== 'listening') return;
    let bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    if (this.decoder === undefined) {
      let first = 0;
      while (first < bytes.length && isJsonWhitespace(bytes[first] as number)) first++;
      if (first === bytes.length) return;
      this.detected = detectFraming(bytes[first] as number);
      this.decoder =
        this.detected === 'lsp'
          ? new LspDecoder(this.options.maxMessageBytes, this.handlers)
          : new NdjsonDecoder(this.options.maxMessageBytes, this.handlers);
      bytes = bytes.subarray(first);
    }
    this.decoder.push(bytes);
  };

  private readonly onEnd = (): void => {
    if (this.state === 'listening') this.decoder?.end();
    this.fireCloseOnce();
  };

  private readonly onInputError = (error: Error): void => {
    this.fireError(error);
  };

  private onBody(bytes: Buffer): void {
    if (this.state !== 'listening') return;
    const message = checkFrame(bytes);
    if (message instanceof FramingError) this.answer(message);
    else this.callback?.(message);
  }

  private onFatal(error: FramingError): void {
    if (this.state !== 'listening') return;
    this.answer(error);
    this.fireError(error);
    this.stop();
  }

  private answer(error: FramingError): void {
    this.options.onProtocolError?.({ code: error.code, message: error.message });
    // A failed write already surfaces as the writer's error event; nothing more to do here.
    this.sink.write(errorResponse(error)).catch(ignore);
  }

  /** Reads and discards until the peer hangs up, or destroys the input a while after our last
   *  frame is flushed: closing with unread input would make the kernel reset the connection. */
  private linger(): void {
    this.input.on('data', ignore);
    this.input.resume();
    this.sink.onFinished(() => {
      setTimeout(() => destroy(this.input), CLOSE_LINGER_MS).unref();
    });
  }

  private fireCloseOnce(): void {
    if (this.closeFired) return;
    this.closeFired = true;
    this.fireClose();
  }
}

function destroy(stream: NodeJS.ReadableStream): void {
  const destroyable = stream as NodeJS.ReadableStream & { destroy?: () => void; destroyed?: boolean };
  if (typeof destroyable.destroy === 'function' && destroyable.destroyed !== true) destroyable.destroy();
}

function ignore(): void {}
