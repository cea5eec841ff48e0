// One connection of the TypeScript client, guarded against a broken peer: a reply larger than the
// message limit, bytes that are not JSON-RPC, valid JSON that is not a message (`[]`, `5`, a
// list id, a deep array), or a reply no call is waiting for (a wrong or null id) end the
// connection at once: every pending call is rejected with ConnectionClosedError saying why, and
// `closed` is set. A server that accepts and never answers is bounded by the per-call timeout.
import type { Message, MessageConnection, MessageReader, MessageWriter } from 'vscode-jsonrpc/node';
import { CancellationTokenSource, createMessageConnection } from 'vscode-jsonrpc/node';
import type { FoundSocket } from '../transport/discovery.js';
import type { Framing } from '../transport/framing.js';
import { createFramedTransport } from '../transport/framing.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../transport/limits.js';
import { CallTimeoutError, closedError, ConnectionClosedError } from './client-errors.js';
import { nonFiniteError } from './finite-params.js';

type Id = string | number;

/** vscode-jsonrpc's own codes for a send or read that failed here (MessageWriteError…ConnectionInactive): not the server's answer. */
export const LOCAL_CODES = new Set([-32099, -32098, -32097, -32096]);

const isResponse = (m: Message): boolean => !('method' in m) && ('result' in m || 'error' in m);

export interface LinkOptions {
  framing: Framing;
  /** Largest reply accepted (default the server's default message limit, 64 MiB). */
  maxMessageBytes?: number;
  /** What the peer is called in errors: "the server" (the socket's path is added by the caller). */
  peer?: string;
  /** The socket this connection goes to and the discovery step that chose it (none for stdio). */
  where?: FoundSocket;
  /**
   * When the connection ends before the peer sent anything: resolves with the reason to give
   * instead (a spawned server's exit code and last stderr lines); pending calls wait for it.
   */
  explainEarlyEnd?: (reason: Error) => Promise<Error>;
}

export class Link {
  readonly connection: MessageConnection;
  /** The socket this connection goes to and the discovery step that chose it; undefined for stdio. */
  readonly where: FoundSocket | undefined;
  private reason: Error | undefined;
  /** Ids of requests sent and not answered (timed-out ones too: their late reply is expected). */
  private readonly sent = new Set<Id>();
  /** Rejecters of the calls waiting for a reply. */
  private readonly waiting = new Set<(err: Error) => void>();
  private readonly closeListeners: ((reason: Error) => void)[] = [];
  private noteListener: ((method: string, params: unknown) => void) | undefined;
  private heardFrom = false;
  private explaining = false;
  private readonly explainEarlyEnd: ((reason: Error) => Promise<Error>) | undefined;

  constructor(
    input: NodeJS.ReadableStream,
    output: NodeJS.WritableStream,
    private readonly destroy: () => void,
    options: LinkOptions,
  ) {
    this.explainEarlyEnd = options.explainEarlyEnd;
    this.where = options.where;
    const t = createFramedTransport(input, output, {
      maxMessageBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
      initialFraming: options.framing,
      answerBadInput: false,
      onProtocolError: (info) => this.lose(new ConnectionClosedError(`the server broke the protocol (${info.message}); the connection is closed`)),
    });
    const reader: MessageReader = {
      onError: t.reader.onError,
      onClose: t.reader.onClose,
      onPartialMessage: t.reader.onPartialMessage,
      listen: (callback) =>
        t.reader.listen((msg) => {
          this.heardFrom = true;
          if (isResponse(msg)) {
            const id = (msg as { id?: unknown }).id;
            if ((typeof id !== 'string' && typeof id !== 'number') || !this.sent.has(id)) {
              const error = (msg as { error?: { message?: unknown } }).error;
              const said = error && typeof error.message === 'string' ? `: ${error.message.slice(0, 200)}` : '';
              this.fail(new ConnectionClosedError(`the server sent a reply with id ${JSON.stringify(id)}, which no call is waiting for${said}; the connection is closed`));
              return;
            }
            this.sent.delete(id);
          }
          callback(msg);
        }),
      dispose: () => t.reader.dispose(),
    };
    const writer: MessageWriter = {
      onError: t.writer.onError,
      onClose: t.writer.onClose,
      write: (msg) => {
        const m = msg as { method?: unknown; id?: unknown };
        if (typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number')) this.sent.add(m.id);
        return t.writer.write(msg);
      },
      end: () => t.writer.end(),
      dispose: () => t.writer.dispose(),
    };
    this.connection = createMessageConnection(reader, writer);
    this.connection.onNotification((method: string, params: unknown) => this.noteListener?.(method, params));
    this.connection.onClose(() => this.lose(new ConnectionClosedError('the server closed the connection')));
    this.connection.onError(([err]) => this.lose(new ConnectionClosedError(`the connection failed: ${err.message}`)));
    this.connection.listen();
  }

  /** Whether the peer has sent any message yet (a spawned server that exits before is a start failure). */
  get heard(): boolean {
    return this.heardFrom;
  }

  /** Why the connection ended; undefined while it is open. */
  get closed(): Error | undefined {
    return this.reason;
  }

  onClosed(listener: (reason: Error) => void): void {
    if (this.reason) listener(this.reason);
    else this.closeListeners.push(listener);
  }

  /** Every notification of this connection (one listener: the client routes them). */
  onNotification(listener: (method: string, params: unknown) => void): void {
    this.noteListener = listener;
  }

  /**
   * Sends a request; rejects on the server's error, a closed connection, or after `timeoutMs`
   * (`budgetMs`: the call's whole timeout, which the error names, when part was spent before).
   */
  request(method: string, params: unknown, timeoutMs?: number, budgetMs = timeoutMs): Promise<unknown> {
    if (this.reason) return Promise.reject(closedError(this.reason));
    const bad = nonFiniteError(method, params);
    if (bad) return Promise.reject(bad);
    return new Promise((resolve, reject) => {
      const cancel = new CancellationTokenSource();
      let timer: NodeJS.Timeout | undefined;
      const settle = (): void => {
        this.waiting.delete(failCall);
        if (timer) clearTimeout(timer);
        cancel.dispose();
      };
      const failCall = (err: Error): void => {
        settle();
        reject(err);
      };
      this.waiting.add(failCall);
      if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
        timer = setTimeout(() => {
          settle();
          cancel.cancel(); // $/cancelRequest: a read not yet answered is dropped by the server
          reject(new CallTimeoutError(`${method}: no reply within ${budgetMs} ms (the server is stuck or overloaded)`));
        }, Math.max(0, timeoutMs));
      }
      // A send that fails while the end is being explained waits for the explanation (end()).
      const lost = (err: unknown): void => {
        const fromServer = err instanceof Error && 'code' in err && typeof err.code === 'number' && !LOCAL_CODES.has(err.code);
        if (!fromServer && !this.reason && this.explainEarlyEnd && !this.heardFrom) {
          this.lose(new ConnectionClosedError(`the connection failed: ${err instanceof Error ? err.message : String(err)}`));
          if (!this.reason) return; // end() rejects it with the explanation
        }
        failCall(this.reason && !fromServer ? closedError(this.reason) : err instanceof Error ? err : new Error(String(err)));
      };
      let sent: Promise<unknown>;
      try {
        sent = this.connection.sendRequest(method, params ?? {}, cancel.token);
      } catch (err) {
        lost(err);
        return;
      }
      sent.then(
        (value) => {
          settle();
          resolve(value);
        },
        lost,
      );
    });
  }

  /** Sends a notification (no reply); refused like a request when its params cannot be sent. */
  notify(method: string, params: unknown): Promise<void> {
    if (this.reason) return Promise.reject(closedError(this.reason));
    const bad = nonFiniteError(method, params);
    if (bad) return Promise.reject(bad);
    try {
      return this.connection.sendNotification(method, params);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  /** Ends the connection (idempotent): pending calls are rejected with `reason`. */
  fail(reason: Error): void {
    this.end(reason);
  }

  /** The connection ended by itself: before the peer said anything, explained if it can be. */
  private lose(reason: Error): void {
    if (this.reason || this.explaining) return;
    if (this.explainEarlyEnd && !this.heardFrom) {
      // Calls sent meanwhile join the waiting ones: all are rejected with the explanation.
      this.explaining = true;
      this.explainEarlyEnd(reason).then(
        (why) => this.end(why),
        () => this.end(reason),
      );
      return;
    }
    this.end(reason);
  }

  private end(reason: Error): void {
    if (this.reason) return;
    this.reason = reason;
    for (const fail of [...this.waiting]) fail(reason);
    this.waiting.clear();
    this.connection.dispose();
    this.destroy();
    for (const l of this.closeListeners.splice(0)) l(reason);
  }
}
