// The heap settings `serve` applies to itself (src/commands/serve-heap.ts applies them; why these,
// there): what they are and which of them a host's own node flags leave out. Apart from the module
// that applies them, which loads node's `v8` and `perf_hooks`, so that `serve` can say what it
// will set before it sets it, after its first reply.

/** Growth of V8's old space past the survivors of the last full collection before the next one, in %. */
export const HEAP_GROWING_PERCENT = 30;
/** The young generation's semi-space size (MB) past which it stops growing (V8's default: 16). */
export const YOUNG_SEMI_SPACE_MB = 8;
/** V8's defaults for the two flags serve sets (its defaults: a flag at its default value counts as unset). */
export const V8_DEFAULT_FLAGS = ['--heap-growing-percent=0', '--semi-space-growth-factor=2'] as const;

export interface HeapSettings {
  /** The old space's growing percent `serve` set; undefined when node was given its own. */
  growingPercent?: number;
  /** The semi-space size (MB) the young generation stops growing at; undefined when node was given its own. */
  youngSemiSpaceMb?: number;
}

/** Whether node's command line sets `flag` (either spelling, `--flag=value` or `--flag value`). */
function hasFlag(execArgv: readonly string[], flag: string): boolean {
  return execArgv.some((a) => {
    const arg = a.replaceAll('_', '-');
    return arg === flag || arg.startsWith(`${flag}=`);
  });
}

/** What `serve` should set, given node's command-line flags: nothing a user already chose there. */
export function heapSettingsFor(execArgv: readonly string[]): HeapSettings {
  const settings: HeapSettings = {};
  if (!hasFlag(execArgv, '--heap-growing-percent') && !hasFlag(execArgv, '--max-old-space-size')) settings.growingPercent = HEAP_GROWING_PERCENT;
  if (!hasFlag(execArgv, '--max-semi-space-size') && !hasFlag(execArgv, '--semi-space-growth-factor')) settings.youngSemiSpaceMb = YOUNG_SEMI_SPACE_MB;
  return settings;
}
