// A change-feed source (src/server/feed-limits.ts FeedSource) whose transcript reads the test
// answers, or fails, one by one: each read waits in `reads` until the test settles it, and
// `nextRead()` settles when the next one arrives. What the feed told it of failures is in `errors`.
import type { StateDocument } from '../../src/protocol/model.js';
import type { FeedPage, FeedSource } from '../../src/server/feed-limits.js';

export interface ScriptedRead {
  name: string;
  from: number;
  answer(p: FeedPage): void;
  fail(e: Error): void;
}

export function scriptedSource(document: () => StateDocument, revision = 0) {
  const reads: ScriptedRead[] = [];
  let readSeen: (() => void) | undefined;
  const errors: string[] = [];
  const src: FeedSource & { revision: number } = {
    revision,
    epoch: 'E',
    document,
    entriesFrom: (name, from) =>
      new Promise<FeedPage>((resolve, reject) => {
        reads.push({ name, from, answer: resolve, fail: reject });
        readSeen?.();
      }),
    error: (message) => void errors.push(message),
  };
  const nextRead = (): Promise<void> => new Promise((resolve) => (readSeen = resolve));
  return { src, reads, errors, nextRead };
}
