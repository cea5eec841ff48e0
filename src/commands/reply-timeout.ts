// How long a client command waits for a server's reply: a server that accepts the connection
// and never answers (stuck, or not a herrscher-state server) must not hang a shell or a health
// check for ever. Generous, so a loaded machine's slow answer is still waited for;
// $HERRSCHER_STATE_REPLY_TIMEOUT_MS sets another bound (a monitor that wants to know sooner).
const DEFAULT_REPLY_TIMEOUT_MS = 30_000;

/**
 * The longest wait a Node timer can hold (2^31 - 1 ms, about 24.8 days): a longer one fires
 * after 1 ms, with a warning on stderr, so `--timeout 1e99` (meant as "wait") failed at once.
 * A longer bound given is held to this one.
 */
export const MAX_TIMEOUT_MS = 2_147_483_647;

/** ms held to what a timer can wait. */
export function timerMs(ms: number): number {
  return Math.min(ms, MAX_TIMEOUT_MS);
}

/** The bound on each reply, in ms: $HERRSCHER_STATE_REPLY_TIMEOUT_MS when it is a positive number (at most MAX_TIMEOUT_MS). */
export function replyTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const given = Number(env.HERRSCHER_STATE_REPLY_TIMEOUT_MS);
  return Number.isFinite(given) && given > 0 ? timerMs(given) : DEFAULT_REPLY_TIMEOUT_MS;
}
