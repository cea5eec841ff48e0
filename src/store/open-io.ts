// The store's open (store-open.ts) makes ~20 file-system calls in turn: the folder checks, the
// sweep, the recovery's looks for side files, and the reads of state.json and its side files,
// most of which find nothing for a new state. Through the thread pool each one is a hop (a
// wake-up of a pool thread, then of the main thread): on 2 busy cores they made the open of a
// new state 3-20 ms, the first call on it. Here, while the open runs, those calls are made on
// the main thread instead (each a few µs), as the look at state.json before each commit is
// (io.ts, lstatNow): metadata of the folder being opened, and whole reads of small files only.
// A file past SMALL_READ_BYTES is read through the thread pool as before, so a big state.json
// or log never holds the event loop. Once the open has ended, every call is the base Io's.
import { closeSync, constants as C, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { errnoOf } from '../common/errno.js';
import { linkRefused, notRegularFile } from './io.js';
import type { Io } from './io.js';

/** Files up to this size are read on the main thread during an open (state.json of ~100 sessions). */
export const SMALL_READ_BYTES = 64 * 1024;

/**
 * Runs `call` now; its result, or its error as a promise rejected a microtask later, once the
 * caller awaits it, as the async call's is: a promise rejected before any handler is attached
 * goes through node's unhandled-rejection bookkeeping, which cost more than the call itself.
 */
function now<T>(call: () => T): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (err) {
    return new Promise<T>((_resolve, reject) => queueMicrotask(() => reject(err)));
  }
}

/** `file` read whole on this thread when it is a small regular file; undefined when it is bigger. */
function readSmall(file: string): Buffer | undefined {
  let fd: number;
  try {
    // As io.ts's readFile: no link followed, and O_NONBLOCK so a FIFO at the name never blocks.
    fd = openSync(file, C.O_RDONLY | C.O_NONBLOCK | C.O_NOFOLLOW);
  } catch (err) {
    if (errnoOf(err) === 'ELOOP') throw linkRefused();
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw notRegularFile(st);
    if (st.size > SMALL_READ_BYTES) return undefined;
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * `base` with its metadata calls and its reads of small files made on the main thread until
 * `end()` is called (the open is over). For the process's own Io only: a test's Io (injected
 * failures, stalls) is used as given.
 */
export function openingIo(base: Io): { io: Io; end(): void } {
  let opening = true;
  const io: Io = {
    ...base,
    mkdir: (dir, mode) => (opening ? now(() => void mkdirSync(dir, { recursive: true, mode })) : base.mkdir(dir, mode)),
    realpath: (file) => (opening ? now(() => realpathSync(file)) : base.realpath(file)),
    lstat: (file) => (opening ? now(() => lstatSync(file)) : base.lstat(file)),
    readdir: (dir) => (opening ? now(() => readdirSync(dir)) : base.readdir(dir)),
    readFile: (file) => {
      if (!opening) return base.readFile(file);
      return now(() => readSmall(file)).then((small) => small ?? base.readFile(file));
    },
  };
  return { io, end: () => { opening = false; } };
}
