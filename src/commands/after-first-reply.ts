// Start work that need not come before a host's first reply, run right after it: a host waits for
// that reply (spawn to first reply is the start-up time it sees), not for this work.
import type { ServerConnection } from '../server/connection.js';

/**
 * Runs `work` once: when `conn` has written its first answer, or `latestMs` after now when it has
 * answered nothing by then (a host that sends nothing on stdio), or on the next turn of the event
 * loop when there is no such connection. A failure of `work` is `onError`'s.
 */
export function afterFirstReply(conn: Pick<ServerConnection, 'firstAnswer'> | undefined, latestMs: number, work: () => Promise<void> | void, onError: (err: unknown) => void): void {
  let done = false;
  const run = (): void => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    void (async () => work())().catch(onError);
  };
  const timer = setTimeout(run, conn ? latestMs : 0);
  timer.unref();
  void conn?.firstAnswer.then(run);
}
