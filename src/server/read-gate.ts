// Holds back a connection's reads while its client is not reading the replies: without it,
// pipelined reads from a client that never reads would buffer every reply until the heap runs
// out (3 000 transcript/read calls reach 4.3 GB).
import type { OutputFlow } from '../transport/framed-writer.js';

/**
 * A read of one connection starts only while fewer than this many of its reads run: each running
 * read may add one reply to the unsent bytes, so this bounds how far past
 * MAX_UNSENT_REPLY_BYTES they can go. Eight keeps reads of different names concurrent. A read's
 * slot is freed when its handler returns, a moment before vscode-jsonrpc writes its reply, so
 * up to twice this many replies may be on their way past the byte bound.
 */
export const MAX_RUNNING_READS = 8;

/**
 * A read starts only while at most this many encoded bytes (replies and notifications) wait to
 * be handed to the OS for its connection. A client that stops reading thus holds at most this
 * plus 2 × MAX_RUNNING_READS replies; its later requests wait (the socket is not read meanwhile,
 * see FramedReader.setCongested) until it reads again or hangs up.
 */
export const MAX_UNSENT_REPLY_BYTES = 1024 * 1024;

/** FIFO admission of one connection's reads, by running count and unsent bytes. */
export class ReadGate {
  private running = 0;
  private readonly queue: (() => void)[] = [];
  private waitingForDrain = false;

  constructor(private readonly flow: OutputFlow | undefined) {}

  /** Resolves when the read may run, in arrival order; then `leave()` must follow, once. */
  enter(): Promise<void> {
    if (this.queue.length === 0 && this.mayStart()) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.queue.push(resolve);
      this.pump();
    });
  }

  leave(): void {
    this.running--;
    this.pump();
  }

  private mayStart(): boolean {
    if (this.running >= MAX_RUNNING_READS) return false;
    const flow = this.flow;
    return flow === undefined || flow.isClosed() || flow.unsentBytes() <= MAX_UNSENT_REPLY_BYTES;
  }

  private pump(): void {
    while (this.queue.length > 0 && this.mayStart()) {
      this.running++;
      (this.queue.shift() as () => void)();
    }
    if (this.queue.length === 0 || this.waitingForDrain || this.running >= MAX_RUNNING_READS || this.flow === undefined) return;
    this.waitingForDrain = true;
    void this.flow.whenUnsentAtMost(MAX_UNSENT_REPLY_BYTES).then(() => {
      this.waitingForDrain = false;
      this.pump();
    });
  }
}
