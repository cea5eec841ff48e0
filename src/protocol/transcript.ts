// transcript/*: transcripts/<name>.jsonl, one entry per line.
import * as z from 'zod';
import { defineMethod } from './define.js';
import { IncarnationGuard, RequireSession, SessionName as Name, Seq, WriterKey } from './fields.js';
import { TranscriptEntry, TranscriptUsage } from './model.js';

export const transcriptAppend = defineMethod({
  method: 'transcript/append',
  goName: 'AppendTranscript',
  summary: 'Appends one entry; answered once the line is in the file. The session row must exist unless requireSession is false.',
  params: () => z.strictObject({
    name: Name,
    entry: TranscriptEntry,
    incarnation: IncarnationGuard,
    requireSession: RequireSession,
    writer: WriterKey,
  }),
  result: () => z.object({ seq: Seq.describe('The entry\'s sequence number.') }),
  errors: ['UnknownSession', 'Conflict', 'StorageFailure', 'ShuttingDown'],
  mutates: true,
  example: { params: { name: 'main', entry: { ts: '2026-07-26T00:00:05Z', role: 'assistant', text: 'done', cost: 0.004, tokens_in: 30, tokens_out: 55, dur_ms: 4200 } }, result: { seq: 41 } },
});

export const transcriptRead = defineMethod({
  method: 'transcript/read',
  goName: 'ReadPage',
  summary: 'The newest `limit` entries with seq < `before`, in file order (all when limit is absent or 0); page back with before = firstSeq.',
  params: () => z.strictObject({
    name: Name,
    limit: z.number().int().min(0).optional(),
    before: Seq.optional().describe('Only entries older than this seq (paging backwards).'),
  }),
  result: () => z
    .object({
      entries: z.array(TranscriptEntry),
      firstSeq: Seq.describe('The seq of entries[0] (entries[i] has firstSeq + i); when empty, where they would start.'),
    })
    .meta({ id: 'TranscriptPage', description: 'Consecutive entries and the seq of the first.' }),
  errors: ['StorageFailure'],
  example: { params: { name: 'main', limit: 2 }, result: { entries: [{ ts: '2026-07-26T00:00:00Z', role: 'user', text: 'fix it' }, { ts: '2026-07-26T00:00:05Z', role: 'assistant', text: 'done', cost: 0.004 }], firstSeq: 40 } },
});

export const transcriptLast = defineMethod({
  method: 'transcript/last',
  goName: 'LastTranscriptTimestamp',
  summary: 'The ts of the newest entry, or "" (served from memory after the first call).',
  params: () => z.strictObject({ name: Name }),
  result: () => z.object({ ts: z.string() }),
  errors: ['StorageFailure'],
  example: { params: { name: 'main' }, result: { ts: '2026-07-26T00:00:05Z' } },
});

export const transcriptRemove = defineMethod({
  method: 'transcript/remove',
  goName: 'RemoveTranscript',
  summary: 'Deletes the transcript file; removed is false when there was none.',
  params: () => z.strictObject({ name: Name }),
  result: () => z.object({ removed: z.boolean() }),
  errors: ['StorageFailure', 'ShuttingDown'],
  mutates: true,
  example: { params: { name: 'main' }, result: { removed: true } },
});

export const transcriptUsage = defineMethod({
  method: 'transcript/usage',
  goName: 'Usage',
  summary: 'Spend and token sums over every entry ever appended, including those compaction removed; O(1).',
  params: () => z.strictObject({ name: Name }),
  result: () => TranscriptUsage,
  errors: ['StorageFailure'],
  example: {
    params: { name: 'main' },
    result: { entries: 42, cost: 1.25, tokens_in: 5200, tokens_out: 8100, cache_read: 900, cache_create: 60, dur_ms: 182000, firstTs: '2026-07-20T09:00:00Z', lastTs: '2026-07-26T00:00:05Z' },
  },
});
