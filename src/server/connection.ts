// One client: a vscode-jsonrpc connection whose every request goes through dispatch. Requests
// of a connection apply in arrival order (vscode-jsonrpc hands them over one per turn and the
// store enqueues synchronously); a read waits for the connection's earlier writes, so a client
// that pipelines a write and then a read sees its write.
import type { Logger } from 'pino';
import type { Message, MessageConnection, MessageReader, MessageWriter, ResponseMessage } from 'vscode-jsonrpc/node';
import { createMessageConnection, ResponseError } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../protocol/errors.js';
import { methods } from '../protocol/table.js';
import type { ServerContext } from './bind.js';
import { dispatch, isMethodName } from './dispatch.js';
import { toRpcError } from './to-rpc-error.js';

const isRequest = (m: Message): boolean => 'method' in m && 'id' in m && (m as { id: unknown }).id !== undefined;
const isResponse = (m: Message): m is ResponseMessage => !('method' in m) && 'id' in m;

/** vscode-jsonrpc's logger, routed to pino at debug: it reports what it drops, we answer it. */
function rpcLogger(log: Logger) {
  return {
    error: (m: string) => log.debug({ rpc: 'error' }, m),
    warn: (m: string) => log.debug({ rpc: 'warn' }, m),
    info: (m: string) => log.debug({ rpc: 'info' }, m),
    log: (m: string) => log.debug({ rpc: 'log' }, m),
  };
}

export class ServerConnection {
  readonly connection: MessageConnection;
  private unanswered = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly writes = new Set<Promise<unknown>>();
  private closed = false;
  private readonly closeListeners: (() => void)[] = [];

  constructor(
    reader: MessageReader,
    writer: MessageWriter,
    private readonly ctx: ServerContext,
    readonly log: Logger,
  ) {
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
      write: async (msg) => {
        try {
          await writer.write(msg);
        } finally {
          if (isResponse(msg)) this.answered();
        }
      },
      end: () => writer.end(),
      dispose: () => writer.dispose(),
    };
    this.connection = createMessageConnection(countingReader, countingWriter, rpcLogger(log));
    this.connection.onRequest((method, params) => this.handle(method, params));
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

  private answered(): void {
    this.unanswered--;
    if (this.unanswered > 0) return;
    const waiters = this.idleWaiters.splice(0);
    for (const w of waiters) w();
  }

  private async handle(method: string, params: unknown): Promise<unknown> {
    const started = process.hrtime.bigint();
    try {
      if (!isMethodName(method) || methods[method].notification) {
        throw new ResponseError(ErrorCodes.MethodNotFound, `unknown method ${JSON.stringify(method)}`);
      }
      if (methods[method].mutates) {
        const p = dispatch(method, params, this.ctx);
        this.writes.add(p);
        void p.finally(() => this.writes.delete(p)).catch(() => undefined);
        return await p;
      }
      if (this.writes.size > 0) await Promise.allSettled([...this.writes]);
      return await dispatch(method, params, this.ctx);
    } catch (err) {
      const { error, unexpected } = toRpcError(err);
      if (unexpected) this.log.error({ err, method }, 'handler failed');
      throw error;
    } finally {
      if (this.log.isLevelEnabled('debug')) {
        this.log.debug({ method, us: Number(process.hrtime.bigint() - started) / 1000 }, 'request');
      }
    }
  }
}
