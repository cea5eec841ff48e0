// How a client reconnects: the backoff between attempts, and the states it reports.

export interface ReconnectOptions {
  /** The wait before the first attempt, in ms (default 100). */
  initialDelayMs?: number;
  /** The longest wait between attempts, in ms (default 5000); each wait doubles up to it. */
  maxDelayMs?: number;
  /** Attempts before giving up (default: none, it tries until close()). */
  maxAttempts?: number;
}

/** What onConnectionState reports. */
export type ConnectionState =
  | { state: 'lost'; error: Error }
  | { state: 'retrying'; attempt: number; error: Error }
  | { state: 'restored'; attempt: number }
  | { state: 'closed'; error: Error };

export const reconnectDefaults = { initialDelayMs: 100, maxDelayMs: 5000 } as const;

/** The wait before attempt `attempt` (1-based): doubling from the initial delay up to the max,
 *  with ±20 % jitter so clients of one restarted server do not all come back at once. */
export function backoffDelay(o: { initialDelayMs: number; maxDelayMs: number }, attempt: number): number {
  const base = Math.min(o.maxDelayMs, o.initialDelayMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}
