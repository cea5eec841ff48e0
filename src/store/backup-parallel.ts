// How many files a backup handles at once, and the helper that keeps that many in flight (both
// steps: fixing in backup-fix.ts, copying in backup-write.ts).

/**
 * Files handled at once: each step is a few system calls through libuv's thread pool, so a few
 * dozen in flight keep it busy where one at a time waited for each round trip (2000 sessions took
 * seconds to fix, with every write held meanwhile). Each holds at most two descriptors.
 */
export const FILES_AT_ONCE = 32;

/** `fn` over `items`, at most `n` at once; the results in the items' order. */
export async function inParallel<T, R>(items: readonly T[], n: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}
