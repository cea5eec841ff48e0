// V8 accepts a code cache only from a process whose non-default V8 flags are the ones the cache was
// made with, and it checks them at each compile. So a flag set at run time (v8.setFlagsFromString,
// as `serve` sets its heap flags) makes every later compile refuse every cache, node's own cache of
// its built-in modules included. A Worker compiles its ~100 built-in modules as it starts: with
// serve's heap flags set, all from source, ~30 ms of CPU more per Worker, a seventh of a short
// server life with a write (docs/performance.md, "A served session end to end").
//
// So whoever sets V8 flags at run time registers here how to put them back to V8's defaults and
// how to set them again, and whoever starts a Worker of its own holds them at the defaults until
// that worker has loaded. Process-wide state, as V8's flags are. Flags that node was given on its
// command line are never touched here: they were in effect when node's cache was checked anyway.

/** Flags set at run time: how to put them back to V8's defaults, and how to set them again. */
export interface RuntimeV8Flags {
  toDefaults(): void;
  apply(): void;
}

let registered: RuntimeV8Flags | undefined;
let holds = 0;

/** Registers the flags this process sets at run time (replacing any registered before; undefined: none). */
export function registerRuntimeV8Flags(flags: RuntimeV8Flags | undefined): void {
  registered = flags;
}

/** Whether the flags are held at V8's defaults now: whoever sets them must wait for the release. */
export function v8FlagsHeld(): boolean {
  return holds > 0;
}

/**
 * Puts the registered flags back to V8's defaults (if none was held already) until every hold is
 * released; returns the release, which sets them again when it is the last (calling it twice
 * releases once).
 */
export function holdV8FlagDefaults(): () => void {
  if (holds++ === 0) registered?.toDefaults();
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--holds === 0) registered?.apply();
  };
}
