// Params several methods share, declared once: the session name every per-session method keys
// on, the optional incarnation guard of every mutation, the appends' session-row rule, and a
// transcript sequence number.
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
