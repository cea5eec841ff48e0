// How long a client command waits for a server's reply: a server that accepts the connection
// and never answers (stuck, or not a herrscher-state server) must not hang a shell or a health
// check for ever. Generous, so a loaded machine's slow answer is still waited for;
// $HERRSCHER_STATE_REPLY_TIMEOUT_MS sets another bound (a monitor that wants to know sooner).
const DEFAULT_REPLY_TIMEOUT_MS = 30_000;

/** The bound on each reply, in ms: $HERRSCHER_STATE_REPLY_TIMEOUT_MS when it is a positive number. */
export function replyTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const given = Number(env.HERRSCHER_STATE_REPLY_TIMEOUT_MS);
  return Number.isFinite(given) && given > 0 ? given : DEFAULT_REPLY_TIMEOUT_MS;
}
