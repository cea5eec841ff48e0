// transcript/*: transcripts/<name>.jsonl, one entry per line.
import { z } from 'zod';
import { defineMethod } from './define.js';
import { TranscriptEntry } from './model.js';

const Name = z.string().describe('The session name (one path component).');

export const transcriptAppend = defineMethod({
  method: 'transcript/append',
  summary: 'Appends one entry; answered once the line is in the file. The session row must exist.',
  params: z.strictObject({
    name: Name,
    entry: TranscriptEntry.strict(),
    incarnation: z.string().optional().describe('When given, refuse with -32050 unless it is the session\'s current incarnation.'),
  }),
  result: z.object({}),
  errors: ['UnknownSession', 'Conflict', 'StorageFailure', 'ShuttingDown'],
  mutates: true,
});

export const transcriptRead = defineMethod({
  method: 'transcript/read',
  summary: 'The newest `limit` entries in file order (all when absent or 0); unparsable lines are skipped.',
  params: z.strictObject({ name: Name, limit: z.number().int().min(0).optional() }),
  result: z.object({ entries: z.array(TranscriptEntry) }),
  errors: ['StorageFailure'],
});

export const transcriptLast = defineMethod({
  method: 'transcript/last',
  summary: 'The ts of the newest entry, or "" (served from memory after the first call).',
  params: z.strictObject({ name: Name }),
  result: z.object({ ts: z.string() }),
  errors: ['StorageFailure'],
});

export const transcriptRemove = defineMethod({
  method: 'transcript/remove',
  summary: 'Deletes the transcript file; removed is false when there was none.',
  params: z.strictObject({ name: Name }),
  result: z.object({ removed: z.boolean() }),
  errors: ['StorageFailure', 'ShuttingDown'],
  mutates: true,
});
