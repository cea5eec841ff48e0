// What a start does before anything reads a transcript: load the seq high-water marks, take over
// the side files an older layout shared (side-files.ts), and put back from the write-ahead log
// what a crash kept from the files (wal-replay.ts, replayWal), raising each transcript's mark past the
// appends its records acknowledged. Runs under the state file's lock.
import { HighWater, highWaterRelIn } from './high-water.js';
import type { Io } from './io.js';
import { adoptSharedSideFiles } from './side-files.js';
import type { StoreLog } from './store-log.js';
import path from 'node:path';
import { APPEND_KEYS_FILE, keepReplayedKeys } from './append-keys-log.js';
import { walRelIn } from './wal-record.js';
import { replayWal } from './wal-replay.js';

/** The session name of `transcripts/<name>.jsonl`. */
const nameOfTranscript = (rel: string): string => rel.slice('transcripts/'.length, -'.jsonl'.length);

/**
 * Recovers the state dir `dir` for the state file whose side folder is `side`; returns its marks.
 * `freshSide`: the open just made the side folder, so it holds no marks and no log to replay.
 * `sync`: the store's durability is `sync` (the take-over's own replaces are synced only then).
 */
export async function recover(io: Io, dir: string, side: string, log: StoreLog, { freshSide = false, sync = true }: { freshSide?: boolean; sync?: boolean } = {}): Promise<HighWater> {
  const marks = freshSide ? HighWater.none(io, dir, highWaterRelIn(side)) : await HighWater.load(io, dir, log, highWaterRelIn(side));
  await adoptSharedSideFiles(io, dir, side, { marks, nameOf: nameOfTranscript, log, sync });
  if (freshSide) return marks;
  await replayWal(io, dir, log, async (seqs, keys) => {
    for (const [rel, next] of seqs) marks.raise(nameOfTranscript(rel), next);
    await marks.save();
    // The keys only the records held durably (their lines may have been lost with the page cache).
    await keepReplayedKeys(io, path.join(dir, side, APPEND_KEYS_FILE), keys);
  }, { rel: walRelIn(side) });
  return marks;
}
