// How this start compiled the CLI bundle, as the bin (src/cli.ts) left it: `accepted` (from the
// build's V8 code cache), `rejected` (by V8: another node version or other V8 flags than the
// build's), `stale` (made for another bundle), `damaged` (V8's data does not match its checksum:
// not handed to V8, which would crash on it), `absent`, `unreadable`; `none` when the process was
// not started through the bin (tsx runs src/ directly). serve logs it in its `serving` line, so a
// slow start can be told from a cache that did not fit.

interface CliStart {
  codeCache?: unknown;
}

const start = (): CliStart | undefined => (globalThis as Record<symbol, unknown>)[Symbol.for('herrscher-state.cli-start')] as CliStart | undefined;

export function codeCacheUse(): string {
  const codeCache = start()?.codeCache;
  return typeof codeCache === 'string' ? codeCache : 'none';
}

/** Whether this start found the cache damaged: then it is written again as the process exits. */
export function codeCacheDamaged(): boolean {
  return start()?.codeCache === 'damaged';
}
