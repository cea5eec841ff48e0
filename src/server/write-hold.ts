// Holding back every connection's writes for a moment: a backup fixes the state dir while no
// write is in flight and none can start (store/backup.ts), so the copy holds every write answered
// before that moment and none after. Reads are never held.
import type { CallHandler } from './handler.js';
import { StoreError } from '../store/store-error.js';

/** How long a hold waits for the writes in flight to finish before it gives up (and lets writes go). */
export const DRAIN_TIMEOUT_MS = 30_000;

export class WriteHold {
  /** Writes dispatched and not yet answered. */
  private active = 0;
  private held: Promise<void> | undefined;
  private drainWaiters: (() => void)[] = [];

  constructor(private readonly drainTimeoutMs = DRAIN_TIMEOUT_MS) {}

  /** Writes in flight now (tests). */
  get inFlight(): number {
    return this.active;
  }

  /** The chain's step before dispatch: a write waits while a hold is on, then counts as in flight until answered. */
  handler(next: CallHandler): CallHandler {
    return (call) => {
      if (!call.write) return next(call);
      // Not held: dispatched in this very turn, so writes keep the order in which they arrived.
      if (!this.held) return this.run(next, call);
      const wait = async (): Promise<unknown> => {
        while (this.held) await this.held;
        return this.run(next, call);
      };
      return wait();
    };
  }

  /**
   * Runs `fn` once every write in flight has been answered, with new writes held until it ends.
   * One at a time. Refused (and writes let go) when the writes in flight take longer than the bound.
   */
  async quiet<T>(fn: () => Promise<T>): Promise<T> {
    while (this.held) await this.held.catch(() => undefined);
    let release!: () => void;
    this.held = new Promise<void>((resolve) => (release = resolve));
    try {
      await this.drained();
      return await fn();
    } finally {
      this.held = undefined;
      release();
    }
  }

  private async run(next: CallHandler, call: Parameters<CallHandler>[0]): Promise<unknown> {
    this.active++;
    try {
      return await next(call);
    } finally {
      this.active--;
      if (this.active === 0) for (const w of this.drainWaiters.splice(0)) w();
    }
  }

  private drained(): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.drainWaiters = this.drainWaiters.filter((w) => w !== done);
        reject(new StoreError('io', `${this.active} write(s) in flight did not finish within ${this.drainTimeoutMs} ms; nothing was copied, try again`,
          { code: 'ETIMEDOUT' }, 'ETIMEDOUT'));
      }, this.drainTimeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      this.drainWaiters.push(done);
    });
  }
}
