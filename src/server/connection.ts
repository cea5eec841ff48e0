// One client: a vscode-jsonrpc connection whose every request goes through the handler chain
// (handler.ts): answer → order → gate → cancel → write hold → dispatch. This file counts what is owed to the
// client (idle()), sends its notifications and tells who listens when it closes.
import type { Logger } from 'pino';
import type { Message, MessageConnection, MessageReader, MessageWriter, ResponseMessage } from 'vscode-jsonrpc/node';
import { createMessageConnection } from 'vscode-jsonrpc/node';
import type { OutputFlow } from '../transport/framed-writer.js';
import { outputFlowOf } from '../transport/framed-writer.js';
import type { ServerContext } from './bind.js';
import { cancelHandler } from './cancel-handler.js';
import { gateHandler } from './gate-handler.js';
import { answer, dispatchHandler } from './handler.js';
import { orderHandler } from './order-handler.js';
import { ReadGate } from './read-gate.js';
import type { NotificationSink } from './feed-limits.js';

// Messages come parsed from JSON, checked by the framing (an `"id": null` request is refused
// there), so a message with a method and an `id` key is a request.
const isRequest = (m: Message): boolean => 'method' in m && 'id' in m;
// The server sends no requests: what it writes without a method is a response.
const isResponse = (m: Message): m is ResponseMessage => !('method' in m);

/** vscode-jsonrpc's logger, routed to pino at debug: it reports what it drops, we answer it. */
function rpcLogger(log: Logger) {
  return {
    error: (m: string) => log.debug({ rpc: 'error' }, m),
    // The three below are the Logger interface's: vscode-jsonrpc never calls warn or info, and log
    // only when it cancels a request this server sent (it sends none).
    // Stryker disable next-line all: equivalent, never called (above)
    warn: (m: string) => log.debug({ rpc: 'warn' }, m),
    // Stryker disable next-line all: equivalent, never called (above)
    info: (m: string) => log.debug({ rpc: 'info' }, m),
    // Stryker disable next-line all: equivalent, never called (above)
    log: (m: string) => log.debug({ rpc: 'log' }, m),
  };
}

export class ServerConnection implements NotificationSink {
  readonly connection: MessageConnection;
  private readonly flow: OutputFlow | undefined;
  private unanswered = 0;
  private idleWaiters: (() => void)[] = [];
  private closed = false;
  private readonly closeListeners: (() => void)[] = [];
  private resolveFirstAnswer!: () => void;
  /** Settles once the first answer to a request was written (or its write failed); never if none is. */
  readonly firstAnswer = new Promise<void>((resolve) => (this.resolveFirstAnswer = resolve));

  constructor(
    reader: MessageReader,
    writer: MessageWriter,
    ctx: ServerContext,
    readonly log: Logger,
  ) {
    this.flow = outputFlowOf(writer);
    // Count requests in and responses out, so `idle()` knows when every request got its answer,
    // including requests still queued inside vscode-jsonrpc when the peer hung up.
    const countingReader: MessageReader = {
      onError: reader.onError,
      onClose: reader.onClose,
      onPartialMessage: reader.onPartialMessage,
      listen: (callback) =>
        reader.listen((msg) => {
          if (isRequest(msg)) this.unanswered++;
          callback(msg);
        }),
      dispose: () => reader.dispose(),
    };
    const countingWriter: MessageWriter = {
      onError: writer.onError,
      onClose: writer.onClose,
      write: (msg) => {
        const written = writer.write(msg);
        // Counted as soon as the write settles, either way; the caller gets the write's own outcome.
        if (isResponse(msg)) void written.then(this.countAnswer, this.countAnswer);
        return written;
      },
      // Stryker disable next-line ArrowFunction: equivalent, the connection never ends its writer
      end: () => writer.end(),
      dispose: () => writer.dispose(),
    };
    this.connection = createMessageConnection(countingReader, countingWriter, rpcLogger(log));
    this.connection.onRequest(answer(log, orderHandler(gateHandler(new ReadGate(this.flow), cancelHandler(ctx.writes.handler(dispatchHandler(ctx))))), ctx.metrics));
    this.connection.onNotification((method) => {
      if (method === 'exit') ctx.exit();
      else log.debug({ method }, 'notification ignored');
    });
    this.connection.onClose(() => {
      this.closed = true;
      for (const l of this.closeListeners) l();
    });
    this.connection.onError(([err]) => log.debug({ err }, 'connection error'));
  }

  listen(): void {
    this.connection.listen();
  }

  /** True once this connection closed: nothing more reaches its client. */
  get isClosed(): boolean {
    return this.closed || (this.flow?.isClosed() ?? false);
  }

  /** Encoded bytes written to this client and not yet handed to the OS (replies and notifications). */
  unsentBytes(): number {
    return this.flow?.unsentBytes() ?? 0;
  }

  unsentFrames(): number {
    return this.flow?.unsentFrames() ?? 0;
  }

  whenUnsentAtMost(bytes: number): Promise<void> {
    return this.flow?.whenUnsentAtMost(bytes) ?? Promise.resolve();
  }

  /** Sends a notification; never throws (the store's commit events call this): a closed
   *  connection's notifications are dropped, as its subscriptions end with it. */
  notify(method: string, params: unknown): void {
    // Stryker disable next-line ConditionalExpression: equivalent, vscode-jsonrpc refuses a notification on a closed connection and the catch below drops it the same (forced true is killed, but goes with it)
    if (this.isClosed) return;
    try {
      this.connection.sendNotification(method, params).catch((err: unknown) => this.log.debug({ err, method }, 'notification not sent'));
    } catch (err) {
      this.log.debug({ err, method }, 'notification not sent');
    }
  }

  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  /** Resolves once every request received so far has been answered. */
  idle(): Promise<void> {
    if (this.unanswered <= 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  dispose(): void {
    this.connection.dispose();
  }

  private readonly countAnswer = (): void => this.answered();

  private answered(): void {
    this.resolveFirstAnswer();
    this.unanswered--;
    if (this.unanswered > 0) return;
    const waiters = this.idleWaiters.splice(0);
    for (const w of waiters) w();
  }
}
