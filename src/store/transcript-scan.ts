// A transcript's first read in a process (Transcript.load, transcript.ts): what the file holds
// (its inode, size, entries, newest ts and usage) and how it is numbered (the seq of its first
// entry and the usage compaction removed before it, from its meta or the seq high-water mark),
// from the summary an append wrote down plus the file's tail past it, else from the whole file.
import type { FileHandle } from 'node:fs/promises';
import { isErrno } from '../common/errno.js';
import { HEAD_BYTES, headOf } from './file-head.js';
import type { Io } from './io.js';
import { ioError, StoreError } from './store-error.js';
import type { StoreLog } from './store-log.js';
import type { Generation } from './transcript-meta.js';
import { findGeneration, readSummary, summaryBeside, writeMeta } from './transcript-meta.js';
import { scanEntries } from './transcript-read.js';
import type { UsageSum } from './usage.js';
import { addEntry, concatUsage, sumToJson, zeroSum } from './usage.js';

/** What the store knows of the file without reading it: kept exact by every write it makes. */
export interface Snapshot {
  /** Inode of the file (0: no file). */
  ino: number;
  /** Bytes of the file up to its last complete, counted line. */
  size: number;
  /** Entries in the file (lines Go's reader would return). */
  count: number;
  /** Seq of the file's first entry. */
  firstSeq: number;
  /** `head` of the file (see transcript-meta.ts): how a meta generation recognises it; undefined when unknown. */
  head: string | undefined;
  /** Usage of entries compaction removed (persisted in the meta). */
  dropped: UsageSum;
  /** Usage of every entry ever appended (dropped + in the file), in append order. */
  total: UsageSum;
  /** ts of the newest entry a full read returns (Go's ReadTranscriptLast). */
  lastTs: string;
  /** Counts replacements of the file (compaction, removal): a read checks it is still reading its version. */
  generation: number;
}

/** What a scan reads and reports through: the transcript's files, its log and its seq mark. */
export interface ScanContext {
  io: Io;
  file: string;
  rel: string;
  metaFile: string;
  metaRelPath: string;
  log: StoreLog;
  mark: { get(): number; raise(next: number): void };
}

/**
 * Reads the file once: its snapshot, and how many of its first bytes the summary on disk
 * describes (`summarized`, when one did).
 */
export async function scanTranscript(t: ScanContext): Promise<{ snap: Snapshot; summarized?: number }> {
  let fh: FileHandle;
  try {
    fh = await t.io.open(t.file, 'r');
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return { snap: emptySnapshot() }; // no file: no entries (as Go)
    throw ioError('read', t.rel, err);
  }
  try {
    const ino = await t.io.inode(fh);
    const size = await t.io.size(fh);
    const prefix = Buffer.alloc(Math.min(size, HEAD_BYTES));
    await t.io.read(fh, prefix, 0);
    // What this file's first bytes hold, as an append wrote it down: believed only if it names
    // this very file (inode, first bytes) and ends within it; the rest is scanned.
    const found = await readSummary(t.io, ...summaryBeside(t.metaFile, t.metaRelPath), { ino, size, prefix },
      (why) => t.log.error(why));
    // It ends where a line ends (as every append leaves the file), or it is about another file.
    const known = found && (found.size === 0 || await endsLine(t.io, fh, found.size)) ? found : undefined;
    if (known) {
      const tail = { ...known.total };
      let tailEntries = 0;
      await scanEntries(t.io, fh, size, (e) => {
        addEntry(tail, e); // on from the summary's sum, entry by entry, as the appends added them
        tailEntries++;
      }, known.size);
      const count = known.count + tailEntries;
      // The seq numbering still comes from the meta, as for a scan (its copies checked and repaired,
      // a loss reported); a summary that disagrees with it is not used.
      const { firstSeq, dropped } = await numbering(t, ino, prefix, count);
      if (firstSeq === known.firstSeq && sameSum(dropped, known.dropped)) {
        t.mark.raise(firstSeq + count);
        const lastTs = tailEntries > 0 ? tail.lastTs : known.lastTs;
        return { snap: { ino, size, head: headOf(prefix), count, firstSeq, dropped, total: tail, lastTs, generation: 0 }, summarized: known.size };
      }
    }
    // Streamed: only the numbers are kept, and the event loop runs between chunks.
    // A torn tail counts as Go's reader counts it; its repair before the next append keeps that.
    const inFile = zeroSum();
    const costs: number[] = [];
    await scanEntries(t.io, fh, size, (e) => {
      addEntry(inFile, e);
      costs.push(e.cost ?? 0);
    });
    const { firstSeq, dropped } = await numbering(t, ino, prefix, inFile.entries);
    t.mark.raise(firstSeq + inFile.entries);
    const total = concatUsage(dropped, inFile);
    // The cost goes on from the compacted part's sum entry by entry, as the appends added it:
    // float addition regrouped (dropped + the file's own sum) could differ in the last bits.
    if (dropped.entries > 0) total.cost = costs.reduce((sum, c) => sum + c, dropped.cost);
    return {
      snap: {
        ino,
        size,
        head: headOf(prefix),
        count: inFile.entries,
        firstSeq,
        dropped,
        total,
        lastTs: inFile.entries > 0 ? inFile.lastTs : '',
        generation: 0,
      },
    };
  } catch (err) {
    throw err instanceof StoreError ? err : ioError('read', t.rel, err);
  } finally {
    await fh.close();
  }
}

/** Whether the byte before offset `at` is a newline. */
async function endsLine(io: Io, fh: FileHandle, at: number): Promise<boolean> {
  const b = Buffer.alloc(1);
  return (await io.read(fh, b, at - 1)) === 1 && b[0] === 0x0a;
}

/**
 * The seq of the file's first entry and the usage compaction removed before it: from the first
 * copy of the meta that describes this very file (a damaged or missing copy is rebuilt from it).
 * When no copy does, the durable high-water mark numbers the file, so no seq already answered
 * is answered again, and one error names the file and what was lost.
 */
async function numbering(t: ScanContext, ino: number, prefix: Buffer, count: number): Promise<{ firstSeq: number; dropped: UsageSum }> {
  const found = await findGeneration(t.io, t.metaFile, t.metaRelPath, ino, prefix);
  if (found.gen) {
    const bad = [...found.damaged, ...found.missing];
    if (bad.length) {
      try {
        await rebuildMeta(t, { ...found.gen, head: found.gen.head ?? headOf(prefix) });
        t.log.warn(`${bad.join(' and ')} ${bad.length === 1 ? 'was' : 'were'} missing or damaged; rebuilt from the other copy`);
      } catch (err) {
        // A repair that fails (a folder where the copy belongs) must not fail the read: one copy holds.
        t.log.error(`${bad.join(' and ')} ${bad.length === 1 ? 'is' : 'are'} missing or damaged and could not be rebuilt; the other copy is used`, err);
      }
    }
    return { firstSeq: found.gen.firstSeq, dropped: found.gen.dropped };
  }
  const mark = t.mark.get();
  if (mark <= count && found.damaged.length === 0) return { firstSeq: 0, dropped: zeroSum() }; // never compacted
  const firstSeq = Math.max(0, mark - count);
  t.log.error(
    `${t.rel}: every copy of its side file (${t.metaRelPath} and its .copy) is missing, damaged or about another file; ` +
    `seq numbers continue from the durable high-water mark ${mark} (the file's entries numbered from ${firstSeq}), ` +
    `and the usage of ${firstSeq} compacted entries is lost`,
  );
  // Written down at once, so the next start numbers the file the same way, and says nothing.
  await rebuildMeta(t, { ino, head: headOf(prefix), firstSeq, dropped: zeroSum() });
  return { firstSeq, dropped: zeroSum() };
}

function rebuildMeta(t: ScanContext, gen: Generation): Promise<void> {
  return writeMeta(t.io, t.metaFile, t.metaRelPath, gen);
}

const sameSum = (a: UsageSum, b: UsageSum): boolean => JSON.stringify(sumToJson(a)) === JSON.stringify(sumToJson(b));

/** The snapshot of no file. */
export function emptySnapshot(): Snapshot {
  return { ino: 0, size: 0, head: undefined, count: 0, firstSeq: 0, dropped: zeroSum(), total: zeroSum(), lastTs: '', generation: 0 };
}

