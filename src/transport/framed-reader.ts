// The MessageReader half of a framed transport: detects the framing, decodes frames, answers
// what is not a JSON-RPC message, and hands the rest to vscode-jsonrpc.
//
// 'vscode-jsonrpc/node', not 'vscode-jsonrpc': it re-exports the same classes and, on import,
// installs the Node runtime layer (timers) that createMessageConnection needs, so a connection
// built on this transport works whichever of the two entry points its author imported.
import { AbstractMessageReader, Disposable } from 'vscode-jsonrpc/node';
import type { DataCallback, Message } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../protocol/error-codes.js';
import type { FrameBudget } from './frame-budget.js';
import { processFrameBudget } from './frame-budget.js';
import type { FrameDecoder, FrameHandlers, Framing } from './frame-decoder.js';
import { detectFraming, isJsonWhitespace } from './frame-decoder.js';
import type { FrameSink } from './frame-sink.js';
import { errorResponse, FramingError, invalidRequest } from './framing-error.js';
import { CLOSE_LINGER_MS, quote } from './limits.js';
import { LspDecoder } from './lsp-framing.js';
import { checkFrame, unusableNotification } from './message-check.js';
import { NdjsonDecoder } from './ndjson.js';
import type { Id } from './request-ids.js';
import { RequestIds } from './request-ids.js';

export interface ProtocolErrorInfo {
  code: number;
  message: string;
}

export interface FramedReaderOptions {
  maxMessageBytes: number;
  /** Where unfinished messages' bytes are counted with other connections' (default: the process's). */
  frameBudget?: FrameBudget;
  onProtocolError?: (info: ProtocolErrorInfo) => void;
  /**
   * Answer bad input with an error response (default true, as a server must). A client sets
   * false: its peer sent no request to answer, and the client ends the connection instead.
   */
  answerBadInput?: boolean;
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
  /** Ids of requests delivered and not yet answered: a second request with one is refused. */
  private readonly ids = new RequestIds();
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
    this.decoder?.discard();
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

  /** The request with this id (ours, as delivered) was answered: returns the peer's id, free again. */
  answered(id: Id): Id | undefined {
    return this.ids.release(id);
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
      const budget = this.options.frameBudget ?? processFrameBudget;
      this.decoder =
        this.detected === 'lsp'
          ? new LspDecoder(this.options.maxMessageBytes, this.handlers, budget)
          : new NdjsonDecoder(this.options.maxMessageBytes, this.handlers, budget);
      bytes = bytes.subarray(first);
    }
    this.decoder.push(bytes);
  };

  private readonly onEnd = (): void => {
    if (this.state === 'listening') this.decoder?.end();
    this.decoder?.discard();
    this.fireCloseOnce();
  };

  private readonly onInputError = (error: Error): void => {
    this.fireError(error);
  };

  private onBody(bytes: Buffer): void {
    if (this.state !== 'listening') return;
    const message = checkFrame(bytes);
    if (message instanceof FramingError) {
      this.answer(message);
      return;
    }
    const unusable = unusableNotification(message);
    if (unusable !== undefined) {
      this.options.onProtocolError?.({ code: ErrorCodes.InvalidParams, message: `notification dropped: ${unusable}` });
      return;
    }
    if (!this.claimId(message) || !this.mapCancel(message)) return;
    this.callback?.(message);
  }

  /**
   * Refuses a request whose id is already in flight on this connection: vscode-jsonrpc queues
   * requests by id, so the second one would silently replace the first, which would be neither
   * run nor answered. The first runs; the second is answered -32600. The request delivered carries
   * our id for it (request-ids.ts), which tells 7 from "7".
   */
  private claimId(message: Message): boolean {
    const m = message as { method?: unknown; id?: unknown };
    if (typeof m.method !== 'string' || (typeof m.id !== 'string' && typeof m.id !== 'number')) return true;
    const ours = this.ids.claim(m.id);
    if (ours === undefined) {
      this.answer(invalidRequest(`"id" ${typeof m.id === 'string' ? quote(m.id) : String(m.id)} is already used by a request of this connection not yet answered; ids in flight must be unique`, m.id));
      return false;
    }
    m.id = ours;
    return true;
  }

  /**
   * Points a `$/cancelRequest` at our id for the request it names; one naming no request in
   * flight (answered already, or never sent) is dropped: there is nothing to cancel.
   */
  private mapCancel(message: Message): boolean {
    const m = message as { method?: unknown; id?: unknown; params?: { id: Id } };
    if (m.method !== '$/cancelRequest' || m.id !== undefined || m.params === undefined) return true;
    const ours = this.ids.inFlight(m.params.id);
    if (ours === undefined) return false;
    m.params = { ...m.params, id: ours };
    return true;
  }

  private onFatal(error: FramingError): void {
    if (this.state !== 'listening') return;
    this.answer(error);
    this.fireError(error);
    this.stop();
  }

  private answer(error: FramingError): void {
    this.options.onProtocolError?.({ code: error.code, message: error.message });
    if (this.options.answerBadInput === false) return;
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
