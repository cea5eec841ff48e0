// --exit-with-parent: Node has no parent-death signal, but an orphan is re-parented (to init or a
// subreaper), so a ppid that is no longer the parent's pid means the parent died. The parent's
// pid is the one passed (--parent-pid: the host's own, exact even when it died before this
// process ran a line) or the ppid the bin read as its first statement (src/cli.ts), never one
// read later: a parent that died during the start would then be taken for init, and never missed.

/** What the bin (src/cli.ts) records as it starts; absent when src/ runs directly (tsx). */
interface CliStart {
  parentPid?: unknown;
}

/** The ppid when this module was evaluated: the fallback when the bin did not record one. */
const ppidAtLoad = process.ppid;

/** The parent's pid as it was when the process started. */
export function parentPidAtStart(): number {
  const start = (globalThis as Record<symbol, unknown>)[Symbol.for('herrscher-state.cli-start')] as CliStart | undefined;
  return typeof start?.parentPid === 'number' ? start.parentPid : ppidAtLoad;
}

export interface ParentWatch {
  /** True once the parent was seen gone (the first check runs at once, in watchParent). */
  readonly gone: boolean;
  /** Called (once) when the parent is seen gone from now on; at once if it already was. */
  onGone(f: () => void): void;
}

/**
 * Checks at once, then every `pollMs`, whether `parent` is still this process's parent. The
 * timer does not keep the process alive.
 */
export function watchParent(parent: number, pollMs: number): ParentWatch {
  let gone = false;
  let listener: (() => void) | undefined;
  const check = (): void => {
    if (gone || process.ppid === parent) return;
    gone = true;
    clearInterval(timer);
    listener?.();
  };
  const timer = setInterval(check, pollMs);
  timer.unref();
  check();
  return {
    get gone() {
      return gone;
    },
    onGone(f) {
      listener = f;
      if (gone) f();
    },
  };
}
