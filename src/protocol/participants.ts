// participants/*: participants/<name>.log, one user id per line in first-seen order.
import * as z from 'zod';
import { defineMethod } from './define.js';
import { IncarnationGuard, RequireSession, SessionName as Name } from './fields.js';

export const participantsAppend = defineMethod({
  method: 'participants/append',
  goName: 'AppendParticipant',
  summary: 'Adds a user id (trimmed; non-empty, no CR/LF, at most 256 chars) unless present. The session row must exist unless requireSession is false.',
  params: () => z.strictObject({
    name: Name,
    userId: z.string().describe('Trimmed before it is stored or compared.'),
    incarnation: IncarnationGuard,
    requireSession: RequireSession,
  }),
  result: () => z.object({ added: z.boolean().describe('false when the id was already there') }),
  errors: ['UnknownSession', 'Conflict', 'StorageFailure', 'ShuttingDown'],
  mutates: true,
  example: { params: { name: 'main', userId: 'u1' }, result: { added: true } },
});

export const participantsRead = defineMethod({
  method: 'participants/read',
  goName: 'ReadParticipants',
  summary: 'Every user id, in first-seen order.',
  params: () => z.strictObject({ name: Name }),
  result: () => z.object({ userIds: z.array(z.string()) }),
  errors: ['StorageFailure'],
  example: { params: { name: 'main' }, result: { userIds: ['u1', 'local'] } },
});

export const participantsRemove = defineMethod({
  method: 'participants/remove',
  goName: 'RemoveParticipants',
  summary: 'Deletes the journal; removed is false when there was none.',
  params: () => z.strictObject({ name: Name }),
  result: () => z.object({ removed: z.boolean() }),
  errors: ['StorageFailure', 'ShuttingDown'],
  mutates: true,
  example: { params: { name: 'main' }, result: { removed: true } },
});
