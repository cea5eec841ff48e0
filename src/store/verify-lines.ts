// Verify's line checks of transcripts and participants journals: every line one its readers
// take, a torn last line named as what a crash leaves.
import { constants as C } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { goDecodeUtf8, goTrimSpace } from './go-text.js';
import { nodeIo } from './io.js';
import { scanLines } from './line-scan.js';
import { parseLine } from './transcript-read.js';
import type { Report } from './verify.js';

/** Go's bufio.Scanner token limit: ReadParticipants stops at a longer line (participants.ts). */
const GO_SCAN_MAX_LINE = 64 * 1024 - 1;

/** Calls `onLine(line, number, terminated)` for each line of a file; false when it cannot be read. */
async function eachLine(dir: string, rel: string, problem: Report, onLine: (line: Buffer, n: number, terminated: boolean) => boolean | void): Promise<boolean> {
  let fh;
  try {
    fh = await fs.open(path.join(dir, rel), C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (err) {
    problem(rel, `cannot be read: ${(err as Error).message}`);
    return false;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) {
      problem(rel, 'is not a regular file');
      return false;
    }
    let n = 0;
    let end = st.size;
    await scanLines(nodeIo, fh, st.size, (line) => {
      n++;
      end -= line.length + 1;
      return onLine(line, n, end >= 0);
    }, { unterminated: true });
    return true;
  } finally {
    await fh.close();
  }
}

/** Each line of a transcript is an entry its readers take (or blank). */
export async function checkTranscript(dir: string, rel: string, problem: Report): Promise<void> {
  await eachLine(dir, rel, problem, (line, n, terminated) => {
    const text = goDecodeUtf8(line);
    if (goTrimSpace(text) === '' || parseLine(text)) return;
    problem(rel, terminated
      ? 'not a transcript entry: readers skip this line'
      : 'torn last line (no newline, not an entry): readers skip it, the next append cuts it', n);
  });
}

/** Each line of a journal is one Go's reader takes: terminated, and within its scanner's limit. */
export async function checkJournal(dir: string, rel: string, problem: Report): Promise<void> {
  await eachLine(dir, rel, problem, (line, n, terminated) => {
    if (line.length > GO_SCAN_MAX_LINE) {
      problem(rel, 'longer than 64 KiB: Go\'s reader stops here and drops every later id', n);
      return false;
    }
    if (!terminated) problem(rel, 'torn last line (no newline): readers skip it, the next append cuts it', n);
  });
}
