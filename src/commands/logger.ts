// Logs: pino JSON to stderr (or --log-file), never stdout, which is the protocol in stdio mode.
import pino from 'pino';
import type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Logging {
  log: Logger;
  /** Writes out what is buffered; called before every exit. */
  flush(): void;
}

export function createLogging(level: LogLevel, file?: string): Logging {
  const dest = pino.destination({ dest: file ?? 2, sync: false, mkdir: true });
  const log = pino({ level, base: { pid: process.pid } }, dest);
  return {
    log,
    flush: () => {
      try {
        dest.flushSync();
      } catch {
        // nothing left to flush, or stderr is gone: exiting anyway
      }
    },
  };
}
