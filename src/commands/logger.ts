// Logs: pino to stderr (or --log-file), never stdout, which is the protocol in stdio mode. JSON
// lines for machines; human lines (pretty-log.ts) when a person watches: stderr is a terminal,
// or --log-format pretty.
import pino from 'pino';
import type { Logger } from 'pino';
import { prettyStream } from './pretty-log.js';
import { mapStack } from './stack-map.js';
import { errnoOf } from '../common/errno.js';
import type { LogFormat, LogLevel } from './log-options.js';

export interface Logging {
  log: Logger;
  /** Where the lines go: a file, or stderr. */
  readonly toFile: boolean;
  /** Writes out what is buffered, synchronously; for an exit that cannot wait. */
  flush(): void;
  /**
   * Writes out every line in order, a write already in flight first, then resolves: for an exit
   * that can wait (at most END_WAIT_MS, then what is left is flushed synchronously).
   */
  end(): Promise<void>;
  /**
   * Opens --log-file again at its path (after logrotate renamed it): lines not yet written go to
   * the new file, none is lost. Resolves with why it failed (the lines then go on to the old
   * file), or undefined; with no file (stderr) there is nothing to reopen: `false`.
   */
  reopen(): Promise<Error | undefined | false>;
}

/** How long an exit waits for the log's last writes (a stalled stderr must not keep the process). */
export const END_WAIT_MS = 2000;

/** `auto`: pretty when the lines go to a terminal, JSON to a pipe or a file. */
export function resolveFormat(format: LogFormat, file: string | undefined, stderrIsTTY = process.stderr.isTTY === true): 'json' | 'pretty' {
  if (format !== 'auto') return format;
  return file === undefined && stderrIsTTY ? 'pretty' : 'json';
}

export function createLogging(level: LogLevel, file?: string, format: LogFormat = 'auto'): Logging {
  // 0600: the log names sessions and files; only the user who runs the server reads it.
  const dest = pino.destination({ dest: file ?? 2, sync: false, mkdir: true, mode: 0o600 });
  const pretty = resolveFormat(format, file) === 'pretty';
  const detailed = level === 'debug' || level === 'trace';
  const stream = pretty ? prettyStream(dest, { color: file === undefined && process.stderr.isTTY === true, stacks: detailed }) : dest;
  // At debug and trace, stacks point into src/ instead of the minified bundle (stack-map.ts).
  const serializers: pino.LoggerOptions['serializers'] = detailed
    ? {
        err: (e: Error) => {
          const s = pino.stdSerializers.err(e);
          return typeof s.stack === 'string' ? { ...s, stack: mapStack(s.stack) } : s;
        },
      }
    : {};
  const log = pino({ level, base: { pid: process.pid }, serializers }, stream);
  const flush = (): void => {
    try {
      dest.flushSync();
    } catch (err) {
      // Still buffered because stderr is gone or the file's disk is full: exiting anyway, and
      // there is nowhere left to report it but stderr itself, which may be the very thing gone.
      if (errnoOf(err) !== 'EPIPE' && file !== undefined) {
        process.stderr.write(`herrscher-state: flushing the log ${file} failed: ${(err as Error).message}\n`);
      }
    }
  };
  const reopen = (): Promise<Error | undefined | false> =>
    new Promise((resolve) => {
      if (file === undefined) return resolve(false);
      const settle = (err: Error | undefined): void => {
        dest.off('ready', onReady);
        dest.off('error', onError);
        resolve(err);
      };
      const onReady = (): void => settle(undefined);
      // Without a listener, a failed open (the folder gone or not writable) would be thrown.
      const onError = (err: Error): void => settle(err);
      dest.on('ready', onReady);
      dest.on('error', onError);
      try {
        dest.reopen();
      } catch (err) {
        settle(err instanceof Error ? err : new Error(String(err)));
      }
    });
  return {
    log,
    toFile: file !== undefined,
    flush,
    reopen,
    // Not flushSync alone: with an asynchronous write in flight it writes the later lines first,
    // and the earlier ones land after them, or never once the process has exited.
    end: () =>
      new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          dest.off('close', done);
          dest.off('error', done);
          resolve();
        };
        const timer = setTimeout(() => {
          flush();
          done();
        }, END_WAIT_MS);
        dest.once('close', done);
        dest.once('error', done); // the same failure a synchronous flush would meet: nothing to add
        try {
          dest.end();
        } catch {
          flush();
          done();
        }
      }),
  };
}
