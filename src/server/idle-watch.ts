// `serve --exit-when-idle MS`: tells the server's owner once nobody has used it for MS
// milliseconds. A user is an open connection (socket or stdio), counted until it has answered
// every request it received, so a request in flight keeps the server alive after its client left.

export class IdleWatch {
  private users = 0;
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private stopped = false;

  constructor(
    readonly ms: number,
    private readonly onIdle: () => void,
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
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.users === 0 && !this.stopped) this.onIdle();
    }, this.ms);
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
