// watch/*: the change feed. A subscriber is told of each change after it is in the file, in
// commit order; `revision` (state) and `seq` (transcripts) let a subscriber that subscribes and
// then reads drop what it has already seen. A subscriber that comes back (a new connection, a
// restarted server) passes `since`: what it saw last. The server first sends what it missed, then
// the live feed, with no gap and no duplicate.
import * as z from 'zod';
import { defineMethod, defineNotification } from './define.js';
import { GO_TYPE_KEY, Session, StateDocument, TranscriptEntry } from './model.js';

const Names = z.union([z.literal('*'), z.array(z.string())]).describe('"*" for every session, or a list of names.');

const Since = z
  .strictObject({
    epoch: z.string().optional().describe('The epoch the revision belongs to (a subscribe result\'s); another run\'s revision is never replayed.'),
    // A pointer in Go: revision 0 (nothing committed yet in that run) must still be sent.
    revision: z
      .number()
      .int()
      .min(0)
      .optional()
      .meta({ [GO_TYPE_KEY]: '*int' })
      .describe('The last state revision seen: later state changes are replayed, or one state/resync is sent.'),
    transcripts: z
      .record(z.string(), z.number().int().min(-1))
      .optional()
      .describe('For each session, the last seq seen (-1: none): every entry after it is sent, read from the file, in order.'),
  })
  .meta({ id: 'WatchSince' });

export const watchSubscribe = defineMethod({
  method: 'watch/subscribe',
  goName: 'subscribe',
  summary: 'Subscribes this connection to changes; ends with the connection or watch/unsubscribe.',
  params: () => z.strictObject({
    sessions: z.boolean().optional().describe('session/didChange and state/didChange.'),
    transcripts: Names.optional().describe('transcript/didAppend for these sessions.'),
    participants: Names.optional().describe('participants/didAdd for these sessions.'),
    since: Since.optional().describe('What this subscriber saw last: what it missed is sent first, then the live feed.'),
  }),
  result: () => z.object({
    subscription: z.string(),
    revision: z.number().int().describe('The state revision now; later changes carry larger ones.'),
    epoch: z.string().describe('This server run: revisions are comparable only within one epoch (pass it back in since).'),
  }),
  errors: [],
  example: {
    params: { sessions: true, transcripts: '*', since: { epoch: 'e0c6…', revision: 10, transcripts: { main: 41 } } },
    result: { subscription: 'w1', revision: 12, epoch: 'e0c6…' },
  },
});

export const watchUnsubscribe = defineMethod({
  method: 'watch/unsubscribe',
  goName: 'unsubscribe',
  summary: 'Ends a subscription of this connection.',
  params: () => z.strictObject({ subscription: z.string() }),
  result: () => z.object({ unsubscribed: z.boolean().describe('false when no such subscription was open') }),
  errors: [],
  example: { params: { subscription: 'w1' }, result: { unsubscribed: true } },
});

export const sessionDidChange = defineNotification({
  method: 'session/didChange',
  summary: 'A session row was added, updated or removed.',
  params: () => z
    .object({
      subscription: z.string(),
      revision: z.number().int(),
      kind: z.enum(['added', 'updated', 'removed']),
      name: z.string(),
      session: Session.optional().describe('The row after the change; absent when removed.'),
    })
    .meta({ id: 'SessionDidChangeParams' }),
});

export const stateDidChange = defineNotification({
  method: 'state/didChange',
  summary: 'Top-level fields of state.json changed (rows are reported by session/didChange; "sessions" is listed when the rows changed in a way those cannot tell, e.g. a state/save that reordered them: read state/get).',
  params: () => z
    .object({ subscription: z.string(), revision: z.number().int(), fields: z.array(z.string()) })
    .meta({ id: 'StateDidChangeParams' }),
});

export const stateResync = defineNotification({
  method: 'state/resync',
  summary: 'The state changes since the subscriber\'s `since.revision` cannot be replayed (another server run, or too old): the whole document now.',
  params: () => z
    .object({ subscription: z.string(), revision: z.number().int(), epoch: z.string(), state: StateDocument })
    .meta({ id: 'StateResyncParams' }),
});

export const transcriptDidAppend = defineNotification({
  method: 'transcript/didAppend',
  summary: 'An entry was appended (and is in the file).',
  params: () => z
    .object({ subscription: z.string(), name: z.string(), seq: z.number().int(), entry: TranscriptEntry })
    .meta({ id: 'TranscriptDidAppendParams' }),
});

export const participantsDidAdd = defineNotification({
  method: 'participants/didAdd',
  summary: 'A user id was added to a journal.',
  params: () => z
    .object({ subscription: z.string(), name: z.string(), userId: z.string() })
    .meta({ id: 'ParticipantsDidAddParams' }),
});

export const watchOverflow = defineNotification({
  method: 'watch/overflow',
  summary: 'The subscriber fell too far behind: the subscription was dropped; subscribe and read again.',
  params: () => z.object({ subscription: z.string() }).meta({ id: 'WatchOverflowParams' }),
});
