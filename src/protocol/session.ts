// session/*: the rows of state.json. Every mutation takes an optional `incarnation` guard.
import { z } from 'zod';
import { defineMethod } from './define.js';
import { NewSession, SESSION_NAME_PATTERN, Session } from './model.js';

const Name = z.string().describe('The session name.');
const Incarnation = z
  .string()
  .optional()
  .describe('When given, refuse with -32050 unless it is the session\'s current incarnation.');
const FoundChanged = z.object({
  found: z.boolean().describe('false when no session has that name (not an error, as in Go)'),
  changed: z.boolean().describe('false when nothing changed: nothing was written'),
});
const mutationErrors = ['Conflict', 'StorageFailure', 'ShuttingDown'] as const;

export const sessionAdd = defineMethod({
  method: 'session/add',
  summary: 'Adds a session; assigns its id (s_<name>[_N]) when absent and always a fresh incarnation.',
  params: z.strictObject({
    session: NewSession.extend({
      name: z.string().regex(SESSION_NAME_PATTERN, 'must be 1-64 letters, digits, - or _, starting with a letter or digit'),
    }),
  }),
  result: z.object({ session: Session }),
  errors: ['SessionExists', 'StorageFailure', 'ShuttingDown'],
  mutates: true,
});

export const sessionRemove = defineMethod({
  method: 'session/remove',
  summary: 'Removes every row with that name; with purge, its transcript and journal too.',
  params: z.strictObject({
    name: Name,
    purge: z.boolean().optional().describe('Also delete transcripts/<name>.jsonl and participants/<name>.log.'),
    incarnation: Incarnation,
  }),
  result: z.object({ removed: z.boolean() }),
  errors: [...mutationErrors],
  mutates: true,
});

export const sessionFind = defineMethod({
  method: 'session/find',
  summary: 'The first row with that name, or null.',
  params: z.strictObject({ name: Name }),
  result: z.object({ session: Session.nullable() }),
  errors: [],
});

export const sessionList = defineMethod({
  method: 'session/list',
  summary: 'Every session row, in file order.',
  params: z.strictObject({}).default({}),
  result: z.object({ sessions: z.array(Session) }),
  errors: [],
});

export const sessionSetResumeToken = defineMethod({
  method: 'session/setResumeToken',
  summary: 'Sets the backend resume token.',
  params: z.strictObject({ name: Name, resumeToken: z.string(), incarnation: Incarnation }),
  result: FoundChanged,
  errors: [...mutationErrors],
  mutates: true,
});

export const sessionSetPausedReason = defineMethod({
  method: 'session/setPausedReason',
  summary: 'Sets why the budget gate paused the session ("" clears it).',
  params: z.strictObject({ name: Name, paused_reason: z.string(), incarnation: Incarnation }),
  result: FoundChanged,
  errors: [...mutationErrors],
  mutates: true,
});

const budget = Session.pick({ cost_cap: true, token_cap: true, cohort_cost_cap: true, cohort_token_cap: true }).required();

export const sessionSetBudget = defineMethod({
  method: 'session/setBudget',
  summary: 'Sets the four caps and the paused reason at once (0 means no cap).',
  params: z.strictObject({ name: Name, ...budget.shape, paused_reason: z.string(), incarnation: Incarnation }),
  result: FoundChanged,
  errors: [...mutationErrors],
  mutates: true,
});

export const sessionSetBackendTarget = defineMethod({
  method: 'session/setBackendTarget',
  summary: 'Switches vendor, cmd and model, and clears the resume token (it belonged to the old backend).',
  params: z.strictObject({ name: Name, vendor: z.string(), cmd: z.string(), modelId: z.string(), incarnation: Incarnation }),
  result: FoundChanged,
  errors: [...mutationErrors],
  mutates: true,
});

export const sessionSetArchived = defineMethod({
  method: 'session/setArchived',
  summary: 'Archives or resumes a session (row, transcript and journal are kept).',
  params: z.strictObject({ name: Name, archived: z.boolean(), incarnation: Incarnation }),
  result: FoundChanged,
  errors: [...mutationErrors],
  mutates: true,
});
