// A FramedTransport the test drives, for the shared server's routing (shared-hub.ts): the test
// sends the client's messages and closes its side; what the server writes and how often it ends
// the transport are recorded.
import type { DataCallback, Disposable, Message, MessageWriter } from 'vscode-jsonrpc/node';
import { AbstractMessageReader, Emitter } from 'vscode-jsonrpc/node';
import type { FramedTransport } from '../../src/transport/framing.js';

export class StubReader extends AbstractMessageReader {
  private callback: DataCallback | undefined;
  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    return { dispose: () => (this.callback = undefined) };
  }
  /** The client sends `m`. */
  send(m: Message): void {
    this.callback?.(m);
  }
  /** The client leaves. */
  close(): void {
    this.fireClose();
  }
}

/** A message the server wrote: an answer (result or error) or a notification. */
export interface Written {
  jsonrpc: '2.0';
  id?: number | string;
  method?: string;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * A transport the test drives: what the server writes (`written`; `writes(n)` settles once n
 * messages are written or the transport is closed) and how often it closes it (`closed` settles
 * on the first close).
 */
export function stubTransport() {
  const reader = new StubReader();
  const written: Written[] = [];
  let closes = 0;
  let waiters: { n: number; resolve: () => void }[] = [];
  const wake = (): void => {
    waiters = waiters.filter((w) => (written.length >= w.n || closes > 0 ? (w.resolve(), false) : true));
  };
  let onClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (onClosed = resolve));
  const writer: MessageWriter = {
    onError: new Emitter<[Error, Message | undefined, number | undefined]>().event,
    onClose: new Emitter<void>().event,
    write: (m: Message) => {
      written.push(m as unknown as Written);
      wake();
      return Promise.resolve();
    },
    end: () => undefined,
    dispose: () => undefined,
  };
  const t: FramedTransport = {
    reader,
    writer,
    framing: () => 'ndjson',
    close: () => {
      closes++;
      onClosed();
      wake();
    },
  };
  const writes = (n: number): Promise<void> =>
    new Promise((resolve) => {
      waiters.push({ n, resolve });
      wake();
    });
  return { t, reader, written, closed, writes, closes: () => closes };
}

export const request = (id: number, method: string, params?: unknown): Message =>
  ({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) }) as Message;
export const notification = (method: string, params?: unknown): Message =>
  ({ jsonrpc: '2.0', method, ...(params !== undefined ? { params } : {}) }) as Message;
