// Notices that the state dir a server owns was removed (`rm -rf` of a test's temp dir, a user
// clearing their config): from then on every write would go to files no one can open again,
// so the Service stops instead of acknowledging writes that are already lost.
import fs from 'node:fs';

export interface StateDirWatch {
  /** Stops watching; idempotent. */
  close(): void;
}

/** What a look at the dir compares: the directory it leads to. */
export interface DirIdentity {
  dev: number;
  ino: number;
}

/** A timer the watch lets go of (it never holds the process open) and clears. */
export interface WatchTimer {
  unref(): WatchTimer;
}

/** The events of the dir's names, and the watch's end ('error'). */
export interface DirEvents {
  on(event: 'error', listener: (err: Error) => void): unknown;
  close(): void;
}

/**
 * The file system calls and timers the watch uses: the real ones unless a caller (a test that
 * drives the watch step by step) passes its own.
 */
export interface DirWatchIo {
  statSync(dir: string): DirIdentity;
  stat(dir: string, done: (err: NodeJS.ErrnoException | null, st: DirIdentity) => void): void;
  watch(dir: string, options: { persistent: boolean }, listener: (event: string) => void): DirEvents;
  setTimeout(fn: () => void, ms: number): WatchTimer;
  clearTimeout(timer: WatchTimer | undefined): void;
  setInterval(fn: () => void, ms: number): WatchTimer;
  clearInterval(timer: WatchTimer): void;
}

// The timers' clear functions take Node's own handles, which are all the watch ever holds here.
const realIo: DirWatchIo = {
  statSync: fs.statSync,
  stat: fs.stat,
  watch: fs.watch,
  setTimeout,
  clearTimeout: clearTimeout as DirWatchIo['clearTimeout'],
  setInterval,
  clearInterval: clearInterval as DirWatchIo['clearInterval'],
};

/**
 * How long after a name in the dir was removed or renamed it is looked at: `rm -rf` removes the
 * files first and the dir last, and Linux reports the dir's own removal only once nothing holds
 * it open (the store does), so the check follows the files' removal events instead.
 */
export const SETTLE_MS = 100;
/** The fallback when no event comes (no inotify watch left, a file system without events). */
export const POLL_MS = 2000;
/**
 * The same for each state of the shared server: with 200 states open a 2 s poll was 100 stats a
 * second, ~2% of a core while idle; at 10 s it is a fifth of that.
 */
export const SHARED_POLL_MS = 10_000;

/**
 * Watches `dir` and calls `gone` once when the path no longer leads to the directory it led to
 * when the watch began (removed, or replaced by another). Costs one stat per SETTLE_MS while
 * names in the dir are created or removed (our own state.json replacements; the write-ahead log
 * and transcripts live in subfolders, not watched), and one per POLL_MS. A directory moved
 * elsewhere is not reported: its files moved with it. The shared server, with hundreds of states
 * open, looks less often (SHARED_POLL_MS): the events notice a removal at once anyway.
 */
export function watchStateDir(
  dir: string,
  gone: (why: string) => void,
  unwatched: (err: unknown) => void,
  /** Told after each look that found the dir in place (a test waits on it). */
  stillThere?: () => void,
  /** How often the dir is looked at without an event (default POLL_MS; the events do the rest). */
  pollMs: number = POLL_MS,
  /** The file system calls and timers (default: the real ones). */
  io: Partial<DirWatchIo> = {},
): StateDirWatch {
  const { statSync, stat, watch, setTimeout, clearTimeout, setInterval, clearInterval } = { ...realIo, ...io };
  let identity: DirIdentity;
  try {
    const st = statSync(dir);
    identity = { dev: st.dev, ino: st.ino };
  } catch (err) {
    queueMicrotask(() => gone(`the state dir ${dir} cannot be read: ${(err as Error).message}`));
    return { close: () => undefined };
  }
  let closed = false;
  let checking = false;
  let settle: WatchTimer | undefined;
  const check = (): void => {
    if (checking || closed) return;
    checking = true;
    stat(dir, (err, st) => {
      checking = false;
      if (closed) return;
      if (err) {
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') report(`the state dir ${dir} was removed`);
        return;
      }
      if (st.dev !== identity.dev || st.ino !== identity.ino) report(`the state dir ${dir} was replaced by another directory`);
      else stillThere?.();
    });
  };
  const soon = (): void => {
    settle ??= setTimeout(() => {
      settle = undefined;
      check();
    }, SETTLE_MS).unref();
  };
  const poll = setInterval(check, pollMs).unref();
  let watcher: DirEvents | undefined;
  try {
    watcher = watch(dir, { persistent: false }, (event) => {
      if (event === 'rename') soon();
    });
    // The watch ends when the directory does: look then too.
    watcher.on('error', soon);
  } catch (err) {
    // No watch (inotify limits reached): the poll alone notices, within POLL_MS.
    watcher = undefined;
    unwatched(err);
  }
  const report = (why: string): void => {
    close();
    gone(why);
  };
  const close = (): void => {
    if (closed) return;
    closed = true;
    clearInterval(poll);
    clearTimeout(settle);
    watcher?.close();
  };
  return { close };
}
