// The heap settings `serve` applies to itself, measured in docs/performance.md, "Memory under
// load". Under a steady stream of appends the live heap stays at
// ~25 MB, yet RSS reached ~185 MB, for two reasons V8 has by default:
// - the old space grows to up to 4 × what survived the last full collection before it collects
//   again (its factor for a 4 GB limit), and under load much dies there (whatever was queued for
//   a slow subscriber, every request in flight during two scavenges): ~75 MB of garbage;
// - the young generation grows to two 16 MB semi-spaces: 32 MB, most of it empty after each
//   scavenge, all of it resident.
// Old space: growing 30 % past the survivors makes it collect at 1.3 ×, for a handful of extra
// incremental collections (a few ms each) per second of full load. Young generation: it grows
// by doubling (1, 2, 4, 8, 16 MB semi-spaces); once it reaches YOUNG_SEMI_SPACE_MB its growth
// factor is set to 1, so it stays there (and may grow back there after V8 shrinks it when idle).
//
// Why this tool: both factors are read while the process runs (at each full collection, at each
// young-generation growth), so `serve` sets them from inside (v8.setFlagsFromString), with no
// re-exec and no flag that a host spawning us would have to pass. The direct flags are not:
// --max-semi-space-size and --max-old-space-size only act when given on node's command line,
// and a heap cap is a limit (live data past it crashes the server instead of using memory).
// A host that passes any of these flags to node keeps what it passed.
//
// V8's flags belong to the process, and every new isolate resets the growth factor (a Worker's
// heap setup sets it back to 2 when it is below): the store's writer thread, started at the
// first write, undid the hold, and the young generation went on to two 16 MB semi-spaces (RSS
// under load 150–152 MB against 142). So both settings are applied again once a Worker is online.
//
// A flag set at run time also makes V8 refuse node's code cache of its built-in modules, which a
// Worker compiles as it starts (~30 ms of CPU more per Worker): so both settings are registered
// (src/common/v8-flag-hold.ts) with how to put them back to V8's defaults, and the store's writer
// thread holds them there from just before its Worker starts until that worker has answered; the
// release applies them again, as 'online' does for any other Worker. Meanwhile (the few ms of a
// Worker's start) the heap follows V8's own growth.
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';
import { registerRuntimeV8Flags, v8FlagsHeld } from '../common/v8-flag-hold.js';
import type { HeapSettings } from './heap-settings.js';
import { heapSettingsFor, V8_DEFAULT_FLAGS } from './heap-settings.js';


/** Applies the settings to this process (`serve` does once it has answered its first request) and says which are in effect. */
export function applyHeapSettings(execArgv: readonly string[] = process.execArgv): HeapSettings {
  const settings = heapSettingsFor(execArgv);
  const { growingPercent, youngSemiSpaceMb } = settings;
  const setGrowing = (): void => {
    if (growingPercent !== undefined) v8.setFlagsFromString(`--heap-growing-percent=${growingPercent}`);
  };
  // Held for a Worker still loading: the release applies them (registered below).
  if (!v8FlagsHeld()) setGrowing();
  const hold = youngSemiSpaceMb === undefined ? undefined : holdYoungGeneration(youngSemiSpaceMb);
  if (growingPercent !== undefined || hold) {
    const apply = (): void => {
      setGrowing();
      hold?.();
    };
    registerRuntimeV8Flags({
      toDefaults: () => {
        // Only what serve set: a flag from node's command line stays as given.
        if (growingPercent !== undefined) v8.setFlagsFromString(V8_DEFAULT_FLAGS[0]);
        if (hold) v8.setFlagsFromString(V8_DEFAULT_FLAGS[1]);
      },
      apply,
    });
    process.on('worker', (worker) => {
      worker.once('online', () => {
        // Held for a Worker still loading: the release applies them.
        if (!v8FlagsHeld()) apply();
      });
    });
  }
  return settings;
}

/**
 * Lets the young generation grow up to two `semiSpaceMb` semi-spaces and no further: after each
 * collection, its growth factor is 2 below that size and 1 at or above it. (V8 reports the new
 * space's size as both semi-spaces together.)
 */
function holdYoungGeneration(semiSpaceMb: number): () => void {
  const cap = 2 * semiSpaceMb * 1024 * 1024;
  const newSpace = (): number => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
  /** The factor last set (0: none yet, V8's own 2). */
  let factor = 0;
  const set = (again: boolean): void => {
    // Held at V8's defaults while a Worker loads (see above): the release sets it `again`.
    if (v8FlagsHeld()) return;
    const want = newSpace() < cap ? 2 : 1;
    if (want === factor && !again) return;
    factor = want;
    v8.setFlagsFromString(`--semi-space-growth-factor=${want}`);
  };
  new PerformanceObserver(() => set(false)).observe({ entryTypes: ['gc'] });
  // Sets the factor again, whatever it was set to last: a new isolate may have reset it.
  return () => set(true);
}
