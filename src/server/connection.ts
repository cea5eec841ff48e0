// One client: a vscode-jsonrpc connection whose every request goes through dispatch. Requests
// of a connection apply in arrival order: vscode-jsonrpc hands them over one per turn, the store
// enqueues writes synchronously, and reads and writes wait for the other kind sent before them.
// Reads are also where a client that stops reading its replies is held back (ReadGate).
import type { Logger } from 'pino';
import type { CancellationToken, Message, MessageConnection, MessageReader, MessageWriter, ResponseMessage } from 'vscode-jsonrpc/node';
import { createMessageConnection, ResponseError } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../protocol/errors.js';
import { methods } from '../protocol/table.js';
import type { OutputFlow } from '../transport/framed-writer.js';
import { outputFlowOf } from '../transport/framed-writer.js';
import type { ServerContext } from './bind.js';
import { dispatch, isMethodName } from './dispatch.js';
import { ReadGate } from './read-gate.js';
import type { NotificationSink } from './subscriptions.js';
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

/** A request in flight; `waiters` are told when it is answered. */
interface Op {
  waiters?: (() => void)[];
}

/** Resolves once every request open in `ops` now has been answered. */
function allOf(ops: ReadonlySet<Op>): Promise<void> {
  return new Promise((resolve) => {
    let left = ops.size;
    const done = (): void => {
      if (--left === 0) resolve();
    };
    for (const op of ops) (op.waiters ??= []).push(done);
  });
}

export class ServerConnection implements NotificationSink {
  readonly connection: MessageConnection;
  private readonly flow: OutputFlow | undefined;
  private readonly reads: ReadGate;
  private unanswered = 0;
  private idleWaiters: (() => void)[] = [];
  /**
   * Requests of this connection not answered yet, by kind. A read waits for the writes that
   * arrived before it, and a write for the reads before it, so a pipelining client sees the
   * order it sent (its read neither misses an earlier write nor sees a later one), while writes
   * behind writes and reads behind reads still run concurrently. Plain objects, no promise per
   * request: the hot path (a stream of appends) only adds to and deletes from a set.
   */
  private readonly openWrites = new Set<Op>();
  private readonly openReads = new Set<Op>();
  private closed = false;
  private readonly closeListeners: (() => void)[] = [];

  constructor(
    reader: MessageReader,
    writer: MessageWriter,
    private readonly ctx: ServerContext,
    readonly log: Logger,
  ) {
    this.flow = outputFlowOf(writer);
    this.reads = new ReadGate(this.flow);
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
      end: () => writer.end(),
      dispose: () => writer.dispose(),
    };
    this.connection = createMessageConnection(countingReader, countingWriter, rpcLogger(log));
    this.connection.onRequest((method, params, token) => this.handle(method, params, token));
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
    this.unanswered--;
    if (this.unanswered > 0) return;
    const waiters = this.idleWaiters.splice(0);
    for (const w of waiters) w();
  }

  /**
   * Runs one request after the requests it must follow. A read may be cancelled (`$/cancelRequest`)
   * until it is answered: -32800, as LSP. A write is never cancelled once received: it is queued
   * in arrival order with the writes around it and applied, and its answer says so.
   */
  private async handle(method: string, params: unknown, token: CancellationToken): Promise<unknown> {
    const debug = this.log.isLevelEnabled('debug');
    const started = debug ? process.hrtime.bigint() : 0n;
    let op: Op | undefined;
    let mine: Set<Op> | undefined;
    let gated = false;
    try {
      if (!isMethodName(method) || methods[method].notification) {
        throw new ResponseError(ErrorCodes.MethodNotFound, `unknown method ${JSON.stringify(method)}`);
      }
      const write = methods[method].mutates === true;
      const before = write ? this.openReads : this.openWrites;
      mine = write ? this.openWrites : this.openReads;
      mine.add((op = {}));
      if (write) {
        if (before.size > 0) await allOf(before);
        return await dispatch(method, params, this.ctx);
      }
      if (before.size > 0) await cancellable(allOf(before), token);
      const entry = this.reads.enter();
      try {
        await cancellable(entry, token);
      } catch (err) {
        // Cancelled while queued: the slot it will still be given goes back at once.
        void entry.then(() => this.reads.leave());
        throw err;
      }
      gated = true;
      const result = await dispatch(method, params, this.ctx);
      // Cancelled while it ran: the reply the client gave up on is not sent.
      throwIfCancelled(token);
      return result;
    } catch (err) {
      const { error, unexpected } = toRpcError(err);
      if (unexpected) this.log.error({ err, method }, 'handler failed');
      throw error;
    } finally {
      if (gated) this.reads.leave();
      if (op) {
        mine?.delete(op);
        for (const w of op.waiters ?? []) w();
      }
      if (debug) this.log.debug({ method, us: Number(process.hrtime.bigint() - started) / 1000 }, 'request');
    }
  }
}

function cancelled(): ResponseError<unknown> {
  return new ResponseError(ErrorCodes.RequestCancelled, 'request cancelled by $/cancelRequest before it was answered');
}

function throwIfCancelled(token: CancellationToken): void {
  if (token.isCancellationRequested) throw cancelled();
}

/** Waits for `p`, or rejects with -32800 as soon as the request is cancelled. */
function cancellable(p: Promise<void>, token: CancellationToken): Promise<void> {
  if (token.isCancellationRequested) return Promise.reject(cancelled());
  return new Promise((resolve, reject) => {
    const listener = token.onCancellationRequested(() => reject(cancelled()));
    p.then(
      () => {
        listener.dispose();
        resolve();
      },
      (err: unknown) => {
        listener.dispose();
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
