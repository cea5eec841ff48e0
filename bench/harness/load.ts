// The client patterns of the benches, written once and run unchanged against our server and
// its ceilings, so a ratio compares servers (or disks), never two different load generators.
// Every pattern stops at a count or a deadline, whichever comes first.
import type { Bounds } from './config.js';
import { nowUs, percentile } from './stats.js';

/** One request; resolves with its reply. */
export type Call = () => Promise<unknown>;

/** How long past its own deadline a pattern may wait for replies before it reports a hang. */
export const HANG_MS = 30_000;

/**
 * Rejects when `p` has not settled `HANG_MS` after the pattern's deadline, naming what was still
 * unanswered: a server that stops answering must fail the bench precisely, not stall it.
 */
function guard<T>(p: Promise<T>, b: Bounds, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no reply ${(b.maxMs + HANG_MS) / 1000} s after the start: ${what()}`)), b.maxMs + HANG_MS);
  });
  return Promise.race([p, hung]).finally(() => clearTimeout(timer));
}

export interface Latency {
  p50: number;
  p99: number;
  count: number;
}

/** One caller awaiting each call: latency in µs per call. */
export async function awaitEach(call: Call, b: Bounds): Promise<Latency> {
  const lat: number[] = [];
  const end = nowUs() + b.maxMs * 1000;
  const run = async (): Promise<void> => {
    while (lat.length < b.maxCount) {
      const t0 = nowUs();
      if (t0 > end) break;
      await call();
      lat.push(nowUs() - t0);
    }
  };
  await guard(run(), b, () => `call ${lat.length + 1} of one caller awaiting each`);
  return { p50: percentile(lat, 50), p99: percentile(lat, 99), count: lat.length };
}

/**
 * One caller awaiting each call, alternating `a` and `b` (ABBA order): both sides see the same
 * moment's load, so their ratio holds even when other work shares the CPUs.
 */
export async function awaitEachAlternating(a: Call, b: Call, bounds: Bounds): Promise<[Latency, Latency]> {
  const lat: [number[], number[]] = [[], []];
  const calls = [a, b] as const;
  const end = nowUs() + bounds.maxMs * 1000;
  let n = 0;
  const run = async (): Promise<void> => {
    for (; n < bounds.maxCount; n++) {
      if (nowUs() > end) break;
      const side = (n + (n >> 1)) % 2 === 0 ? 0 : 1; // 0 1 1 0 0 1 1 0…
      const t0 = nowUs();
      await calls[side]();
      lat[side].push(nowUs() - t0);
    }
  };
  await guard(run(), bounds, () => `call ${n + 1} of one caller alternating two calls`);
  return lat.map((l) => ({ p50: percentile(l, 50), p99: percentile(l, 99), count: l.length })) as [Latency, Latency];
}

export interface Rate {
  /** Completed calls per second. */
  rate: number;
  count: number;
  seconds: number;
}

/** One caller keeping `inFlight` calls outstanding: completed calls per second. */
export function window(call: Call, inFlight: number, b: Bounds): Promise<Rate> {
  let issued = 0;
  let done = 0;
  const p = new Promise<Rate>((resolve, reject) => {
    const start = nowUs();
    const end = start + b.maxMs * 1000;
    let failed = false;
    const open = (): boolean => issued < b.maxCount && nowUs() < end;
    const issue = (): void => {
      while (!failed && issued - done < inFlight && open()) {
        issued++;
        call().then(
          () => {
            done++;
            if (done === issued && !open()) {
              const seconds = (nowUs() - start) / 1e6;
              resolve({ rate: done / seconds, count: done, seconds });
            } else issue();
          },
          (err: unknown) => {
            failed = true;
            reject(err);
          },
        );
      }
    };
    issue();
  });
  return guard(p, b, () => `${issued - done} of ${issued} calls unanswered (${inFlight} in flight)`);
}

/** `calls.length` callers (one per connection), each awaiting its own calls: total calls per second. */
export async function eachAwaiting(calls: readonly Call[], b: Bounds): Promise<Rate> {
  const start = nowUs();
  const end = start + b.maxMs * 1000;
  let issued = 0;
  let done = 0;
  const loop = async (call: Call): Promise<void> => {
    while (issued < b.maxCount && nowUs() < end) {
      issued++;
      await call();
      done++;
    }
  };
  await guard(Promise.all(calls.map(loop)), b, () => `${issued - done} of ${issued} calls unanswered (${calls.length} callers)`);
  const seconds = (nowUs() - start) / 1e6;
  return { rate: issued / seconds, count: issued, seconds };
}

/** Calls each once and waits: opens files and warms paths so the timed part starts steady. */
export async function prime(calls: readonly Call[]): Promise<void> {
  await Promise.all(calls.map((c) => c()));
}
