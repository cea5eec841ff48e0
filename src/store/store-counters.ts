// What the store counts for an operator's graphs (`status`'s counters): the syncs it asks the disk
// for and the compactions it ran, since the store opened. Plain numbers, read whenever asked.
import type { Io } from './io.js';

export class StoreCounters {
  /** fsync/fdatasync calls: an append's or a replaced file's sync, and each folder sync. */
  fsyncs = 0;
  /** Transcript compactions that replaced their file. */
  compactions = 0;
}

/** `io` with every sync it makes counted in `counters`. */
export function countingSyncs(io: Io, counters: StoreCounters): Io {
  return {
    ...io,
    writeAtomic: (file, data, opts) => {
      if (opts.sync) counters.fsyncs++;
      return io.writeAtomic(file, data, opts);
    },
    appendThenReplace: (line, file, data, opts) => {
      if (line.sync) counters.fsyncs++;
      if (opts.sync) counters.fsyncs++;
      return io.appendThenReplace(line, file, data, opts);
    },
    syncDir: (dir) => {
      counters.fsyncs++;
      return io.syncDir(dir);
    },
    datasync: (fh) => {
      counters.fsyncs++;
      return io.datasync(fh);
    },
    writeSynced: (fh, buf) => {
      counters.fsyncs++;
      return io.writeSynced(fh, buf);
    },
  };
}
