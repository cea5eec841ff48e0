// The heap setting `serve` applies to itself (issue 11 item 3). Under a steady stream of appends
// with a subscriber that reads slowly, everything queued for that subscriber lives long enough to
// be promoted to V8's old space and dies there; V8 lets the old space grow to up to 4 × what
// survived the last full collection before it collects again (its factor for a 4 GB limit), so
// RSS climbed to ~190 MB over a live heap of ~25 MB. A smaller growing factor makes it collect
// at 1.3 × the survivors instead: the peak follows the live data, for a handful of extra
// incremental collections (a few ms each) per second of full load. See docs/performance.md,
// "Memory under load (issue 11 item 3)".
//
// Why this tool: the growing factor is read at every full collection, so it can be set from
// inside the running process (v8.setFlagsFromString, no re-exec, no flag on the command line
// that a host spawning us would have to pass). A heap cap (--max-old-space-size) would also
// lower the factor, but it is a limit: live data past it crashes the server instead of using
// memory, and it can only be set before the heap exists. The young generation's size (16 MB
// semi-spaces) is fixed once the heap exists and halving it doubles the scavenges, so it stays.
import v8 from 'node:v8';

/** Growth of V8's old space past the survivors of the last full collection before the next one, in %. */
export const HEAP_GROWING_PERCENT = 30;

const FLAG = '--heap-growing-percent';

export interface HeapSettings {
  /** The growing percent in effect: ours, or the one node was started with. */
  growingPercent: number;
  /** Who chose it: `serve`, or node's own command line (which we leave alone). */
  source: 'serve' | 'node-flag';
}

/** What `serve` should set, given node's command-line flags: nothing when the user chose a value. */
export function heapSettingsFor(execArgv: readonly string[]): HeapSettings {
  for (let i = 0; i < execArgv.length; i++) {
    const arg = (execArgv[i] as string).replaceAll('_', '-');
    if (arg === FLAG && execArgv[i + 1] !== undefined) return { growingPercent: Number(execArgv[i + 1]), source: 'node-flag' };
    if (arg.startsWith(`${FLAG}=`)) return { growingPercent: Number(arg.slice(FLAG.length + 1)), source: 'node-flag' };
  }
  return { growingPercent: HEAP_GROWING_PERCENT, source: 'serve' };
}

/** Applies the setting to this process (before the store loads) and says what is in effect. */
export function applyHeapSettings(execArgv: readonly string[] = process.execArgv): HeapSettings {
  const settings = heapSettingsFor(execArgv);
  if (settings.source === 'serve') v8.setFlagsFromString(`${FLAG}=${settings.growingPercent}`);
  return settings;
}
