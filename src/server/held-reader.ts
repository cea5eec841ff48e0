// A connection's reader whose messages are held until someone listens: the shared server reads a
// connection's first request to learn which state it wants, opens that state, and only then
// hands the connection to that state's server, which receives every message held meanwhile, in
// order, followed by the rest. A close or an error of the stream while held is passed on after
// the held messages.
import type { DataCallback, Disposable, Message, MessageReader } from 'vscode-jsonrpc/node';
import { AbstractMessageReader } from 'vscode-jsonrpc/node';

export class HeldReader extends AbstractMessageReader {
  private held: Message[] = [];
  private target: DataCallback | undefined;
  private closedWhileHeld = false;
  private readonly subscriptions: Disposable[];

  /**
   * Starts reading `inner` at once; `peek` sees every message as it arrives, held or not (the
   * shared server learns the state from it).
   */
  constructor(
    private readonly inner: MessageReader,
    private readonly peek: (message: Message) => void,
  ) {
    super();
    this.subscriptions = [
      inner.onError((err) => this.fireError(err)),
      inner.onClose(() => (this.target ? this.fireClose() : (this.closedWhileHeld = true))),
      inner.onPartialMessage((info) => this.firePartialMessage(info)),
      inner.listen((message) => {
        if (this.target) this.target(message);
        else {
          this.held.push(message);
          this.peek(message);
        }
      }),
    ];
  }

  /** Messages held now (none once someone listens). */
  get heldCount(): number {
    return this.held.length;
  }

  /** The messages held so far, taken out (the shared server answers them itself when the state cannot be opened). */
  takeHeld(): Message[] {
    return this.held.splice(0);
  }

  /** Delivers the held messages to `callback`, then every later one; a close seen meanwhile follows them. */
  listen(callback: DataCallback): Disposable {
    this.target = callback;
    for (const message of this.held.splice(0)) callback(message);
    if (this.closedWhileHeld) {
      this.closedWhileHeld = false;
      this.fireClose();
    }
    return { dispose: () => (this.target = undefined) };
  }

  override dispose(): void {
    super.dispose();
    for (const s of this.subscriptions) s.dispose();
    this.inner.dispose();
  }
}
