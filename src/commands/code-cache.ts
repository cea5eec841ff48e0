// How this start compiled the CLI bundle, as the bin (src/cli.ts) left it: `accepted` (from the
// build's V8 code cache), `rejected` (by V8: another node version or other V8 flags than the
// build's), `stale` (made for another bundle), `absent`, `unreadable`; `none` when the process was
// not started through the bin (tsx runs src/ directly). serve logs it in its `serving` line, so a
// slow start can be told from a cache that did not fit.
export function codeCacheUse(): string {
  const start = (globalThis as Record<symbol, unknown>)[Symbol.for('herrscher-state.cli-start')] as { codeCache?: unknown } | undefined;
  return typeof start?.codeCache === 'string' ? start.codeCache : 'none';
}
