// `serve --exit-when-idle MS`: tells the server's owner once nobody has used it for MS
// milliseconds. A user is an open connection (socket or stdio), counted until it has answered
// every request it received, so a request in flight keeps the server alive after its client left.

/** The timers an IdleWatch uses: the real ones unless a test drives the clock itself. */
export interface IdleTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

// clearTimeout is given back only what setTimeout made: Node's own handles.
const realTimers: IdleTimers = { setTimeout, clearTimeout: clearTimeout as IdleTimers['clearTimeout'] };

export class IdleWatch {
  private users = 0;
  private timer: unknown;
  private started = false;
  private stopped = false;

  constructor(
    readonly ms: number,
    private readonly onIdle: () => void,
    private readonly timers: IdleTimers = realTimers,
  ) {}

  /** Starts the first wait (once the server listens: nobody could have used it before). */
  start(): void {
    this.started = true;
    this.arm();
  }

  /** A connection opened. */
  enter(): void {
    this.users++;
    this.disarm();
  }

  /** A connection closed and answered everything it had sent. */
  leave(): void {
    this.users = Math.max(0, this.users - 1);
    this.arm();
  }

  /** No more calls to onIdle (the server is stopping for another reason). */
  stop(): void {
    this.stopped = true;
    this.disarm();
  }

  private arm(): void {
    if (!this.started || this.stopped || this.users > 0 || this.timer) return;
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      if (this.users === 0 && !this.stopped) this.onIdle();
    }, this.ms);
  }

  private disarm(): void {
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
