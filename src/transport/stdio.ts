// The transport for `serve --stdio`, where the host is our parent: stdout carries protocol frames
// and nothing else, or the host's reader desyncs.
import { Writable } from 'node:stream';
import type { FramedTransport, FramedTransportOptions } from './framing.js';
import { createFramedTransport } from './framing.js';

export interface StdioTransport extends FramedTransport {
  /** Puts process.stdout.write back as it was (tests, or a server that stops serving stdio). */
  restoreStdout(): void;
}

type WriteFn = typeof process.stdout.write;

export interface StdoutGuard {
  /** The real process.stdout.write, for the one writer of frames. */
  writeFrame: WriteFn;
  restore(): void;
}

/**
 * Builds the framed transport on process.stdin/process.stdout, and sends any other write to
 * stdout (a stray console.log in a dependency) to stderr instead, so only frames reach the host.
 */
export function createStdioTransport(options: FramedTransportOptions): StdioTransport {
  const guard = guardStdout();
  const transport = createFramedTransport(process.stdin, frameOnlyStdout(guard.writeFrame), options);
  return { ...transport, restoreStdout: guard.restore };
}

/**
 * Redirects process.stdout.write to stderr until `restore()`, keeping the real write for frames:
 * whatever else prints to stdout can then never corrupt the host's stream.
 */
export function guardStdout(): StdoutGuard {
  const stdout = process.stdout;
  const original = stdout.write;
  stdout.write = ((...args: unknown[]) => (process.stderr.write as (...a: unknown[]) => boolean)(...args)) as WriteFn;
  return {
    writeFrame: original.bind(stdout) as WriteFn,
    restore: () => {
      stdout.write = original;
    },
  };
}

/**
 * A Writable whose chunks go to the real stdout through `write`, each callback waiting for
 * stdout's own, so stdout's backpressure reaches the transport; ending it leaves fd 1 open.
 */
function frameOnlyStdout(write: WriteFn): Writable {
  // EPIPE when the host is gone arrives as an 'error' on stdout and also in the write callback;
  // without a listener the former would crash the process, the latter reports it.
  process.stdout.on('error', () => undefined);
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      write(chunk, (err) => callback(err ?? null));
    },
  });
}
