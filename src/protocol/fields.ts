// Params several methods share, declared once: the session name every per-session method keys
// on, the optional incarnation guard of every mutation, the appends' session-row rule, a
// transcript sequence number, and the idempotency key of a write that a client may send again.
import * as z from 'zod';

export const SessionName = z.string().describe('The session name (one path component).');

export const IncarnationGuard = z
  .string()
  .optional()
  .describe('When given, refuse with -32050 unless it is the session\'s current incarnation.');

export const RequireSession = z
  .boolean()
  .default(true)
  .describe('false: Go\'s rule, the file is written for any valid name and no session row is made. '
    + 'Default true: -32011 when the name has no session row.');

export const Seq = z
  .number()
  .int()
  .min(0)
  .describe('0 for the first entry appended under a name, +1 per append, stable across compaction.');

export const WriterKey = z
  .strictObject({
    id: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/).describe('The writer: random, one per client that sends writes again (8-64 letters, digits, "_" or "-").'),
    seq: z.number().int().min(1).describe('This write\'s number for that writer: 1, then +1 per write (a write sent again keeps its number).'),
  })
  .meta({
    id: 'WriterKey',
    description: 'Idempotency key: a write sent again with the writer and seq of one already applied is answered as that one was and not applied '
      + 'again, even across a crash or restart of the server (docs/durability.md); a state/save so recognised is answered before its revision '
      + 'is compared. Without it the write is applied as sent.',
  })
  .optional();
