// session/*: the rows of state.json. Every mutation takes an optional `incarnation` guard.
import * as z from 'zod';
import { defineMethod } from './define.js';
import { IncarnationGuard as Incarnation, SessionName as Name, WriterKey as Writer } from './fields.js';
import { NewSession, Session, SessionInfo } from './model.js';

const FoundChanged = z
  .object({
    found: z.boolean().describe('false when no session has that name (not an error, as in Go)'),
    changed: z.boolean().describe('false when nothing changed: nothing was written'),
  })
  .meta({ id: 'FoundChanged', description: 'What a session setter did.' });
const mutationErrors = ['Conflict', 'StorageFailure', 'ShuttingDown'] as const;

export const sessionAdd = defineMethod({
  method: 'session/add',
  goName: 'AddSession',
  summary: 'Adds a session; assigns its id (s_<name>[_N]) when absent and always a fresh incarnation.',
  params: () => z.strictObject({ session: NewSession, writer: Writer }),
  result: () => z.object({ session: Session }),
  errors: ['SessionExists', 'StorageFailure', 'ShuttingDown'],
  mutates: true,
  example: { params: { session: { name: 'main', channelID: 'c1', type: 'text', cmd: 'claude', vendor: 'claude' } }, result: { session: { id: 's_main', incarnation: 'inc_YTAL7AU4NCMZHOE7P7QAFCM67N', name: 'main', channelID: 'c1', type: 'text', cmd: 'claude', vendor: 'claude' } } },
});

export const sessionRemove = defineMethod({
  method: 'session/remove',
  goName: 'RemoveSession',
  summary: 'Removes every row with that name; with purge, its transcript and journal too.',
  params: () => z.strictObject({
    name: Name,
    purge: z.boolean().optional().describe('Also delete transcripts/<name>.jsonl and participants/<name>.log.'),
    incarnation: Incarnation,
  }),
  result: () => z.object({ removed: z.boolean() }),
  errors: [...mutationErrors],
  mutates: true,
  example: { params: { name: 'main', purge: true }, result: { removed: true } },
});

export const sessionFind = defineMethod({
  method: 'session/find',
  goName: 'FindSession',
  summary: 'The first row with that name, or null.',
  params: () => z.strictObject({ name: Name }),
  result: () => z.object({ session: Session.nullable() }),
  errors: [],
  example: { params: { name: 'main' }, result: { session: { id: 's_main', incarnation: 'inc_YTAL7AU4NCMZHOE7P7QAFCM67N', name: 'main', channelID: 'c1', type: 'text', cmd: 'claude' } } },
});

export const sessionList = defineMethod({
  method: 'session/list',
  goName: 'SnapshotSessions',
  summary: 'Every session row, in file order.',
  params: () => z.strictObject({}).default({}),
  result: () => z.object({ sessions: z.array(Session) }),
  errors: [],
  example: { params: {}, result: { sessions: [{ id: 's_main', incarnation: 'inc_YTAL7AU4NCMZHOE7P7QAFCM67N', name: 'main', channelID: 'c1', type: 'text', cmd: 'claude' }] } },
});

export const sessionSetResumeToken = defineMethod({
  method: 'session/setResumeToken',
  goName: 'SetResumeToken',
  summary: 'Sets the backend resume token.',
  params: () => z.strictObject({ name: Name, resumeToken: z.string(), incarnation: Incarnation, writer: Writer }),
  result: () => FoundChanged,
  errors: [...mutationErrors],
  mutates: true,
  example: { params: { name: 'main', resumeToken: 'sid-1' }, result: { found: true, changed: true } },
});

export const sessionSetPausedReason = defineMethod({
  method: 'session/setPausedReason',
  goName: 'SetPausedReason',
  summary: 'Sets why the budget gate paused the session ("" clears it).',
  params: () => z.strictObject({ name: Name, paused_reason: z.string(), incarnation: Incarnation, writer: Writer }),
  result: () => FoundChanged,
  errors: [...mutationErrors],
  mutates: true,
  example: { params: { name: 'main', paused_reason: 'cost' }, result: { found: true, changed: true } },
});

const budget = Session.pick({ cost_cap: true, token_cap: true, cohort_cost_cap: true, cohort_token_cap: true }).required();

export const sessionSetBudget = defineMethod({
  method: 'session/setBudget',
  goName: 'SetBudget',
  summary: 'Sets the four caps and the paused reason at once (0 means no cap).',
  params: () => z.strictObject({ name: Name, ...budget.shape, paused_reason: z.string(), incarnation: Incarnation, writer: Writer }),
  result: () => FoundChanged,
  errors: [...mutationErrors],
  mutates: true,
  example: { params: { name: 'main', cost_cap: 20, token_cap: 1000, cohort_cost_cap: 30, cohort_token_cap: 2000, paused_reason: '' }, result: { found: true, changed: true } },
});

export const sessionSetBackendTarget = defineMethod({
  method: 'session/setBackendTarget',
  goName: 'SetBackendTarget',
  summary: 'Switches vendor, cmd and model, and clears the resume token (it belonged to the old backend).',
  params: () => z.strictObject({ name: Name, vendor: z.string(), cmd: z.string(), modelId: z.string(), incarnation: Incarnation, writer: Writer }),
  result: () => FoundChanged,
  errors: [...mutationErrors],
  mutates: true,
  example: { params: { name: 'main', vendor: 'codex', cmd: 'codex --model gpt-5.5', modelId: 'gpt-5.5' }, result: { found: true, changed: true } },
});

export const sessionSetArchived = defineMethod({
  method: 'session/setArchived',
  goName: 'SetArchived',
  summary: 'Archives or resumes a session (row, transcript and journal are kept).',
  params: () => z.strictObject({ name: Name, archived: z.boolean(), incarnation: Incarnation, writer: Writer }),
  result: () => FoundChanged,
  errors: [...mutationErrors],
  mutates: true,
  example: { params: { name: 'main', archived: true }, result: { found: false, changed: false } },
});

export const sessionInfos = defineMethod({
  method: 'session/infos',
  goName: 'Infos',
  summary: 'Every session with its last activity and usage, in one call, from memory (what a session list needs).',
  params: () => z.strictObject({}).default({}),
  result: () => z.object({ sessions: z.array(SessionInfo) }),
  errors: ['StorageFailure'],
  example: {
    params: {},
    result: {
      sessions: [{
        session: { id: 's_main', incarnation: 'inc_YTAL7AU4NCMZHOE7P7QAFCM67N', name: 'main', channelID: 'c1', type: 'text', cmd: 'claude' },
        lastTs: '2026-07-26T00:00:05Z',
        usage: { entries: 2, cost: 0.004, tokens_in: 30, tokens_out: 55, cache_read: 0, cache_create: 0, dur_ms: 4200, firstTs: '2026-07-26T00:00:00Z', lastTs: '2026-07-26T00:00:05Z' },
      }],
    },
  },
});
