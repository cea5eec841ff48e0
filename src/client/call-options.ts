// A call's own options, apart from the client's core so its declaration imports nothing.

export interface CallOptions {
  /** This call's timeout in ms (default: the client's callTimeoutMs, else none). */
  timeoutMs?: number;
}
