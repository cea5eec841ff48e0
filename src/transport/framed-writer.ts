// The MessageWriter half of a framed transport: vscode-jsonrpc's messages out through the sink,
// in the framing the peer used.
import { AbstractMessageWriter } from 'vscode-jsonrpc/node';
import type { Message, MessageWriter } from 'vscode-jsonrpc/node';
import type { FrameSink } from './frame-sink.js';
import type { Id } from './request-ids.js';

/**
 * What the server needs of a connection's output to bound the memory it holds for a peer: the
 * encoded bytes and frames written but not yet handed to the OS, and a way to wait for them.
 */
export interface OutputFlow {
  unsentBytes(): number;
  unsentFrames(): number;
  /** True once nothing more can be written to this connection. */
  isClosed(): boolean;
  /** Resolves once at most `bytes` are unsent, or at once when the output is gone. */
  whenUnsentAtMost(bytes: number): Promise<void>;
}

/** The output flow of a writer made by this transport; undefined for any other writer. */
export function outputFlowOf(writer: MessageWriter): OutputFlow | undefined {
  return writer instanceof FramedWriter ? writer : undefined;
}


/** Sends each message as one frame; a failed write is reported (as vscode-jsonrpc's own writer
 *  does) and rejected, never retried out of order. */
export class FramedWriter extends AbstractMessageWriter implements MessageWriter, OutputFlow {
  private errorCount = 0;

  constructor(
    private readonly sink: FrameSink,
    /**
     * Told of each response written, so the reader knows which request ids are free again;
     * returns the id the peer gave the request, which the response then carries.
     */
    private readonly onResponse: (id: Id) => Id | undefined = () => undefined,
  ) {
    super();
  }

  async write(message: Message): Promise<void> {
    const id = (message as { id?: unknown }).id;
    if (!('method' in message) && (typeof id === 'string' || typeof id === 'number')) {
      const peer = this.onResponse(id);
      // vscode-jsonrpc builds each response for this one write: it is ours to change.
      if (peer !== undefined) (message as unknown as { id: Id }).id = peer;
    }
    try {
      await this.sink.write(message);
    } catch (err) {
      this.errorCount++;
      this.fireError(err, message, this.errorCount);
      throw err;
    }
  }

  end(): void {
    this.sink.end();
  }

  unsentBytes(): number {
    return this.sink.unsentBytes;
  }

  unsentFrames(): number {
    return this.sink.unsentFrames;
  }

  isClosed(): boolean {
    return this.sink.isClosed;
  }

  whenUnsentAtMost(bytes: number): Promise<void> {
    return this.sink.whenUnsentAtMost(bytes);
  }

  /** Reports the output's failure to the connection (EPIPE when the peer went away). */
  outputFailed(error: Error): void {
    this.fireError(error, undefined, this.errorCount);
  }

  /** Tells the connection that nothing more can be written. */
  outputClosed(): void {
    this.fireClose();
  }

  override dispose(): void {
    this.sink.detach();
    super.dispose();
  }
}
