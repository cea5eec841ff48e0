// The few statistics the benches report: medians across repetitions, percentiles within one.
/** Median of `xs` (mean of the middle two for an even count); NaN for none. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The p-th percentile (0–100) by nearest rank, the usual definition for latency reports. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)));
  return s[rank - 1] as number;
}

/** Microseconds since an arbitrary origin, at sub-µs resolution. */
export const nowUs = (): number => performance.now() * 1000;
