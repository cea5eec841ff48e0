// The data shapes shared by the wire and the files: the JSON names are the file's names, so a Go
// client reuses its structs. Go's key order and omitempty set live here too (goFields), once.
import { z } from 'zod';

/** The largest integer a JS number holds exactly; token counts and caps must stay within it. */
export const MAX_SAFE_COUNT = Number.MAX_SAFE_INTEGER;

const Count = z
  .number()
  .int('must be an integer')
  .min(0, 'must be >= 0')
  .max(MAX_SAFE_COUNT, 'must be <= 2^53-1');
const Cost = z.number().refine(Number.isFinite, 'must be a finite number');

export const HomeRef = z
  .object({ id: z.string(), type: z.string() })
  .describe('Where sessions are created (a Discord category or forum).');
export type HomeRef = z.infer<typeof HomeRef>;

const sessionShape = {
  id: z.string().optional().describe('Stable logical id, s_<name>[_N]; assigned when absent.'),
  incarnation: z
    .string()
    .optional()
    .describe('inc_ + 26 base32 chars; new for every add, tells two lifetimes of a name apart.'),
  name: z.string().describe('The session name; the key of every method.'),
  channelID: z.string(),
  type: z.string().describe('"text" or "forum".'),
  cmd: z.string(),
  backend: z.string().optional(),
  vendor: z.string().optional(),
  modelId: z.string().optional(),
  worktree: z.string().optional(),
  dir: z.string().optional(),
  project: z.string().optional(),
  agent: z.string().optional(),
  resumeToken: z.string().optional(),
  archived: z.boolean().optional(),
  owned: z.boolean().optional(),
  extractor: z.string().optional(),
  journal: z.string().optional(),
  consolidateEvery: z.number().int('must be an integer').optional(),
  gateways: z.array(z.string()).optional(),
  participants: z.array(z.string()).optional(),
  parent: z.string().optional(),
  cost_cap: Cost.optional(),
  token_cap: Count.optional(),
  cohort_cost_cap: Cost.optional(),
  cohort_token_cap: Count.optional(),
  paused_reason: z.string().optional().describe('"cost", "tokens", "cohort_cost", "cohort_tokens" or empty.'),
};

/**
 * A session row of state.json. Unknown keys are kept (a newer Go daemon's fields survive us).
 */
export const Session = z.looseObject(sessionShape).describe('A session row of state.json.');
export type Session = z.infer<typeof Session>;

/** What session/add takes: a row whose id may be given and whose incarnation is always replaced. */
export const NewSession = z
  .looseObject({
    ...sessionShape,
    channelID: sessionShape.channelID.default(''),
    type: sessionShape.type.default(''),
    cmd: sessionShape.cmd.default(''),
  })
  .describe('A session to add; id is assigned when absent, incarnation is always fresh.');
export type NewSession = z.infer<typeof NewSession>;

/** One transcript line. Go writes ts, role, text always and the rest when non-zero. */
export const TranscriptEntry = z
  .object({
    ts: z.string().describe('RFC 3339 UTC without fractions, e.g. 2026-07-26T00:00:00Z.'),
    role: z.string().describe('"user" or "assistant".'),
    text: z.string(),
    cost: Cost.optional(),
    kind: z.string().optional(),
    tokens_in: Count.optional(),
    tokens_out: Count.optional(),
    cache_read: Count.optional(),
    cache_create: Count.optional(),
    dur_ms: Count.optional(),
  })
  .describe('One transcript entry, one compact JSON line in transcripts/<name>.jsonl.');
export type TranscriptEntry = z.infer<typeof TranscriptEntry>;

/** The state document. Unknown top-level keys survive a rewrite. */
export const StateDocument = z
  .looseObject({
    home: HomeRef,
    repo: z.string().optional().describe('Legacy workspace; read by workspaceRoot, never written.'),
    workspace: z.string().optional(),
    source: z.string().optional(),
    sessions: z.array(Session).nullable().describe('null for a state that never had sessions.'),
    statusMessageID: z.string().optional(),
    instanceID: z.string().optional(),
  })
  .describe('The state document, state.json.');
export type StateDocument = z.infer<typeof StateDocument>;

/** How Go encodes a field: its JSON kind and whether omitempty drops the zero value. */
export type GoKind = 'string' | 'bool' | 'int' | 'uint' | 'float' | 'strings' | 'home' | 'sessions';
export interface GoField {
  readonly key: string;
  readonly kind: GoKind;
  readonly omitempty: boolean;
}
const f = (key: string, kind: GoKind, omitempty = true): GoField => ({ key, kind, omitempty });

/** Go's `Session` struct, in declaration order (= JSON key order). */
export const sessionGoFields: readonly GoField[] = [
  f('id', 'string'), f('incarnation', 'string'), f('name', 'string', false),
  f('channelID', 'string', false), f('type', 'string', false), f('cmd', 'string', false),
  f('backend', 'string'), f('vendor', 'string'), f('modelId', 'string'), f('worktree', 'string'),
  f('dir', 'string'), f('project', 'string'), f('agent', 'string'), f('resumeToken', 'string'),
  f('archived', 'bool'), f('owned', 'bool'), f('extractor', 'string'), f('journal', 'string'),
  f('consolidateEvery', 'int'), f('gateways', 'strings'), f('participants', 'strings'),
  f('parent', 'string'), f('cost_cap', 'float'), f('token_cap', 'uint'),
  f('cohort_cost_cap', 'float'), f('cohort_token_cap', 'uint'), f('paused_reason', 'string'),
];

/** Go's `State` struct; `home` and `sessions` are never omitted. */
export const stateGoFields: readonly GoField[] = [
  f('home', 'home', false), f('repo', 'string'), f('workspace', 'string'), f('source', 'string'),
  f('sessions', 'sessions', false), f('statusMessageID', 'string'), f('instanceID', 'string'),
];

/** Go's `HomeRef`: both keys always present. */
export const homeGoFields: readonly GoField[] = [f('id', 'string', false), f('type', 'string', false)];

/** Go's `TranscriptEntry`. */
export const entryGoFields: readonly GoField[] = [
  f('ts', 'string', false), f('role', 'string', false), f('text', 'string', false),
  f('cost', 'float'), f('kind', 'string'), f('tokens_in', 'int'), f('tokens_out', 'int'),
  f('cache_read', 'int'), f('cache_create', 'int'), f('dur_ms', 'int'),
];

/** Herrscher's session-name rule (manager/validate.go): what session/add accepts. */
export const SESSION_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
