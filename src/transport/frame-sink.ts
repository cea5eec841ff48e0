// The one path to a connection's output, shared by the connection's writer and the reader's
// error answers, so every frame goes out whole and in the order it was written.
import type { Framing } from './frame-decoder.js';
import { encodeLsp } from './lsp-framing.js';
import { encodeNdjson } from './ndjson.js';

export interface FrameSinkEvents {
  error(error: Error): void;
  close(): void;
  /** The output's buffer passed its high-water mark (true) or drained (false). */
  congestion(congested: boolean): void;
}

/**
 * Writes frames straight to the output stream: `write` is synchronous, so order is the call
 * order, and no queue of our own grows. Backpressure is passed upstream instead (the reader
 * stops reading requests while the output is congested), which bounds what a slow peer can
 * make us buffer without ever dropping a frame.
 */
export class FrameSink {
  private ended = false;
  private finished = false;
  private congested = false;
  private readonly finishWaiters: (() => void)[] = [];

  constructor(
    private readonly output: NodeJS.WritableStream,
    private readonly framing: () => Framing,
    private readonly events: FrameSinkEvents,
  ) {
    output.on('drain', this.onDrain);
    output.on('error', this.onError);
    output.on('finish', this.onFinish);
    output.on('close', this.onClose);
  }

  get isCongested(): boolean {
    return this.congested;
  }

  /** Resolves once the frame is handed to the OS; rejects when the output is gone. */
  write(message: unknown): Promise<void> {
    if (this.ended) return Promise.reject(new Error('the connection is closed; the message was not sent'));
    let frame: string;
    try {
      frame = this.framing() === 'lsp' ? encodeLsp(message) : encodeNdjson(message);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error('the message cannot be encoded as JSON'));
    }
    return new Promise<void>((resolve, reject) => {
      const ok = this.output.write(frame, (err) => (err ? reject(err) : resolve()));
      if (!ok && !this.congested) {
        this.congested = true;
        this.events.congestion(true);
      }
    });
  }

  /** Ends the output after every frame written so far; later writes are refused. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.output.end();
  }

  /** Calls `f` once everything written has been flushed (at once if it already has). */
  onFinished(f: () => void): void {
    if (this.finished) f();
    else this.finishWaiters.push(f);
  }

  /** Stops reporting events; an error listener stays, so a late EPIPE cannot crash the process. */
  detach(): void {
    this.output.removeListener('drain', this.onDrain);
    this.output.removeListener('finish', this.onFinish);
    this.output.removeListener('close', this.onClose);
    this.output.removeListener('error', this.onError);
    this.output.on('error', ignore);
  }

  private readonly onDrain = (): void => {
    if (!this.congested) return;
    this.congested = false;
    this.events.congestion(false);
  };

  private readonly onError = (error: Error): void => {
    this.ended = true;
    this.events.error(error);
  };

  private readonly onFinish = (): void => {
    this.finished = true;
    for (const f of this.finishWaiters.splice(0)) f();
  };

  private readonly onClose = (): void => {
    this.ended = true;
    this.onFinish();
    // A closed output never drains: un-pause the reader, or a host that closed stdout while we
    // were congested would leave stdin paused and its EOF unseen.
    this.onDrain();
    this.events.close();
  };
}

function ignore(): void {}
