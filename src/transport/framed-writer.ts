// The MessageWriter half of a framed transport: vscode-jsonrpc's messages out through the sink,
// in the framing the peer used.
import { AbstractMessageWriter } from 'vscode-jsonrpc/node';
import type { Message, MessageWriter } from 'vscode-jsonrpc/node';
import type { FrameSink } from './frame-sink.js';

/** Sends each message as one frame; a failed write is reported (as vscode-jsonrpc's own writer
 *  does) and rejected, never retried out of order. */
export class FramedWriter extends AbstractMessageWriter implements MessageWriter {
  private errorCount = 0;

  constructor(private readonly sink: FrameSink) {
    super();
  }

  async write(message: Message): Promise<void> {
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
