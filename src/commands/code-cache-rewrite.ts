// A damaged code cache (src/cli.ts) is written again as the process exits, from what this run
// compiled, so the next start deserializes instead of compiling. Loaded only then (it loads node's
// v8). V8 takes a cache only with the flags it was made with: the heap flags serve sets on itself
// (serve-heap.ts) are put back to V8's defaults first, as the build does. A cache that cannot be
// written (an install folder this user may not write) is left as it is: the next start compiles
// from source again, never worse.
import v8 from 'node:v8';
import { V8_DEFAULT_FLAGS } from './heap-settings.js';

interface CliStart {
  writeCodeCache?: () => void;
}

/** Writes the cache again once the process exits (whatever the command and its exit code). */
export function rewriteCodeCacheAtExit(): void {
  const start = (globalThis as Record<symbol, unknown>)[Symbol.for('herrscher-state.cli-start')] as CliStart | undefined;
  const write = start?.writeCodeCache;
  if (typeof write !== 'function') return;
  process.once('exit', () => {
    try {
      for (const flag of V8_DEFAULT_FLAGS) v8.setFlagsFromString(flag);
      write();
    } catch {
      // Not writable here: the bundle compiles from source at each start, as with no cache.
    }
  });
}
