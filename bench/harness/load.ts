// The client patterns of issue 5 point 3, written once and run unchanged against our server and
// its ceilings, so a ratio compares servers (or disks), never two different load generators.
// Every pattern stops at a count or a deadline, whichever comes first.
import type { Bounds } from './config.js';
import { nowUs, percentile } from './stats.js';

/** One request; resolves with its reply. */
export type Call = () => Promise<unknown>;

export interface Latency {
  p50: number;
  p99: number;
  count: number;
}

/** One caller awaiting each call: latency in µs per call. */
export async function awaitEach(call: Call, b: Bounds): Promise<Latency> {
  const lat: number[] = [];
  const end = nowUs() + b.maxMs * 1000;
  while (lat.length < b.maxCount) {
    const t0 = nowUs();
    if (t0 > end) break;
    await call();
    lat.push(nowUs() - t0);
  }
  return { p50: percentile(lat, 50), p99: percentile(lat, 99), count: lat.length };
}

export interface Rate {
  /** Completed calls per second. */
  rate: number;
  count: number;
  seconds: number;
}

/** One caller keeping `inFlight` calls outstanding: completed calls per second. */
export function window(call: Call, inFlight: number, b: Bounds): Promise<Rate> {
  return new Promise((resolve, reject) => {
    const start = nowUs();
    const end = start + b.maxMs * 1000;
    let issued = 0;
    let done = 0;
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
}

/** `calls.length` callers (one per connection), each awaiting its own calls: total calls per second. */
export async function eachAwaiting(calls: readonly Call[], b: Bounds): Promise<Rate> {
  const start = nowUs();
  const end = start + b.maxMs * 1000;
  let issued = 0;
  const loop = async (call: Call): Promise<void> => {
    while (issued < b.maxCount && nowUs() < end) {
      issued++;
      await call();
    }
  };
  await Promise.all(calls.map(loop));
  const seconds = (nowUs() - start) / 1e6;
  return { rate: issued / seconds, count: issued, seconds };
}

/** Calls each once and waits: opens files and warms paths so the timed part starts steady. */
export async function prime(calls: readonly Call[]): Promise<void> {
  await Promise.all(calls.map((c) => c()));
}
