// The one path to a connection's output, shared by the connection's writer and the reader's
// error answers, so every frame goes out whole and in the order it was written.
import type { Framing } from './frame-decoder.js';
import { encodeLspFrame } from './lsp-framing.js';
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
 * make us buffer without ever dropping a frame. The frames written and not yet handed to the
 * OS are counted in encoded bytes (a stream counts a string's characters, not its UTF-8 bytes,
 * so CJK text would be under-counted threefold), for the server's bounds on unsent replies and
 * notifications.
 */
export class FrameSink {
  private ended = false;
  private finished = false;
  private congested = false;
  private readonly finishWaiters: (() => void)[] = [];
  private unsent = 0;
  private unsentCount = 0;
  private drainWaiters: { bytes: number; resolve: () => void }[] = [];
  /** Corked until the microtasks of this turn have run (see `gather`). */
  private gathering = false;

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

  /** Encoded bytes of the frames written and not yet handed to the OS. */
  get unsentBytes(): number {
    return this.unsent;
  }

  /** How many frames are written and not yet handed to the OS. */
  get unsentFrames(): number {
    return this.unsentCount;
  }

  /** True once nothing more can be written (ended, failed or closed). */
  get isClosed(): boolean {
    return this.ended;
  }

  /** Resolves once at most `bytes` are unsent, or at once when the output is gone. */
  whenUnsentAtMost(bytes: number): Promise<void> {
    if (this.unsent <= bytes || this.ended) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push({ bytes, resolve }));
  }

  /** Resolves once the frame is handed to the OS; rejects when the output is gone. */
  write(message: unknown): Promise<void> {
    if (this.ended) return Promise.reject(new Error('the connection is closed; the message was not sent'));
    let frame: string;
    let bytes: number;
    try {
      if (this.framing() === 'lsp') ({ frame, bytes } = encodeLspFrame(message));
      else {
        frame = encodeNdjson(message);
        bytes = Buffer.byteLength(frame, 'utf8');
      }
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error('the message cannot be encoded as JSON'));
    }
    this.unsent += bytes;
    this.unsentCount++;
    this.gather();
    return new Promise<void>((resolve, reject) => {
      const ok = this.output.write(frame, (err) => {
        this.sent(bytes);
        if (err) reject(err);
        else resolve();
      });
      if (!ok && !this.congested) {
        this.congested = true;
        this.events.congestion(true);
      }
    });
  }

  /**
   * The frames written in one turn go out in one write(2): a commit's notifications and the reply
   * that follows them (written a few promise steps later, in the same run of microtasks) wake the
   * peer once instead of once each, and each costs no system call of its own. The output is
   * corked at the turn's first frame and uncorked by a nextTick: when that frame was written from
   * a promise step (replies and notifications are), the nextTick runs once every promise step of
   * the turn has run, so nothing waits for a later turn of the event loop.
   */
  private gather(): void {
    if (this.gathering) return;
    const out = this.output as NodeJS.WritableStream & { cork?(): void; uncork?(): void };
    if (typeof out.cork !== 'function' || typeof out.uncork !== 'function') return;
    this.gathering = true;
    out.cork();
    process.nextTick(this.turnOver);
  }

  /** The end of a turn's gathering (one function for every turn, not a closure per reply). */
  private readonly turnOver = (): void => {
    this.gathering = false;
    (this.output as NodeJS.WritableStream & { uncork?(): void }).uncork?.();
  };

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

  private sent(bytes: number): void {
    this.unsent -= bytes;
    this.unsentCount--;
    if (this.drainWaiters.length > 0) this.wakeDrainWaiters();
  }

  private wakeDrainWaiters(): void {
    const waiting = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiting) {
      if (this.unsent <= w.bytes || this.ended) w.resolve();
      else this.drainWaiters.push(w);
    }
  }

  private readonly onDrain = (): void => {
    if (!this.congested) return;
    this.congested = false;
    this.events.congestion(false);
  };

  private readonly onError = (error: Error): void => {
    this.ended = true;
    this.wakeDrainWaiters();
    this.events.error(error);
  };

  private readonly onFinish = (): void => {
    this.finished = true;
    for (const f of this.finishWaiters.splice(0)) f();
  };

  private readonly onClose = (): void => {
    this.ended = true;
    this.wakeDrainWaiters();
    this.onFinish();
    // A closed output never drains: un-pause the reader, or a host that closed stdout while we
    // were congested would leave stdin paused and its EOF unseen.
    this.onDrain();
    this.events.close();
  };
}

function ignore(): void {}
