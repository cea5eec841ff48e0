// What `status` counts of the calls a server answered, for an operator's graphs: calls and errors
// per method since the start, and the latency of the latest writes (p50, p99). Counted where
// every request is answered (handler.ts, `answer`), with two clock reads a request.

/** Writes whose latency the percentiles are taken over: the latest, so a graph follows the load now. */
export const LATENCY_SAMPLES = 1024;
/** Where requests for methods the server does not have are counted: never one key per name a client makes up. */
export const UNKNOWN_METHOD = '(unknown method)';

export interface CallCount {
  calls: number;
  errors: number;
}

export interface CallSnapshot {
  calls: Record<string, CallCount>;
  writeLatencyMs: { p50: number | null; p99: number | null; samples: number };
}

export class CallMetrics {
  private readonly perMethod = new Map<string, CallCount>();
  /** A ring of the latest write latencies, in µs. */
  private readonly writeUs = new Float64Array(LATENCY_SAMPLES);
  private writes = 0;

  /** One request answered (`failed`: with an error) after `us` microseconds; `method` one of ours or UNKNOWN_METHOD. */
  answered(method: string, us: number, failed: boolean, write: boolean): void {
    let c = this.perMethod.get(method);
    if (!c) this.perMethod.set(method, (c = { calls: 0, errors: 0 }));
    c.calls++;
    if (failed) c.errors++;
    if (write) this.writeUs[this.writes++ % LATENCY_SAMPLES] = us;
  }

  snapshot(): CallSnapshot {
    const calls: Record<string, CallCount> = {};
    // A Map's keys are never equal: no comparison answers 0.
    for (const [m, c] of [...this.perMethod].sort(([a], [b]) => (a < b ? -1 : 1))) calls[m] = { ...c };
    const n = Math.min(this.writes, LATENCY_SAMPLES);
    const sorted = this.writeUs.slice(0, n).sort();
    // Nearest rank, in ms to the µs.
    const at = (q: number): number | null => (n === 0 ? null : Math.round(sorted[Math.max(0, Math.ceil(q * n) - 1)]!) / 1000);
    return { calls, writeLatencyMs: { p50: at(0.5), p99: at(0.99), samples: n } };
  }
}
