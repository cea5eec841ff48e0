// The data shapes shared by the wire and the files: the JSON names are the file's names, so a Go
// client reuses its structs. Each shape is declared once with an id (`.meta({ id })`), so
// schema/openrpc.json names it once in `components.schemas` and refers to it by `$ref`. Go's key
// order and omitempty set are derived from these declarations (goFieldsOf), not listed again.
import * as z from 'zod';
import { SESSION_NAME_PATTERN } from './session-name.js';

// The store reads the contract through this module alone (its import rule).
export { SESSION_NAME_PATTERN };

/**
 * The JSON Schema keyword naming a Go integer type where `integer` alone is ambiguous: Go's
 * budget caps are `uint64`, every other count an `int`. Read by goFieldsOf and the Go generator.
 */
export const GO_TYPE_KEY = 'x-go-type';

/**
 * A value of a Go integer field: a number while JSON.parse holds it exactly, a bigint beyond
 * 2^53-1 (the wire and the files parse such literals exactly, see common/exact-json).
 */
export type GoInteger = number | bigint;

/** The range of each Go integer type (int is 64 bits on every platform Herrscher runs on). */
export const GO_INTEGER_RANGE = {
  int: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
} as const;

/** Whether `v` is an integer Go's `type` holds: what Go's json.Unmarshal accepts there. */
export function isGoInteger(v: unknown, type: keyof typeof GO_INTEGER_RANGE): v is GoInteger {
  const [min, max] = GO_INTEGER_RANGE[type];
  if (typeof v === 'number') return Number.isSafeInteger(v) && (type === 'int' || v >= 0);
  return typeof v === 'bigint' && v >= min && v <= max;
}

/** A field Go declares as `int` or `uint64`: every value of that type, exactly. */
const goInteger = (type: keyof typeof GO_INTEGER_RANGE) =>
  z
    .custom<GoInteger>((v) => isGoInteger(v, type), {
      message: type === 'int' ? 'must be an integer from -2^63 to 2^63-1 (Go int)' : 'must be an integer from 0 to 2^64-1 (Go uint64)',
    })
    .meta({ type: 'integer', format: type === 'int' ? 'int64' : 'uint64', ...(type === 'uint64' ? { minimum: 0 } : {}), [GO_TYPE_KEY]: type });

const Count = goInteger('int');
const Cap = goInteger('uint64');
/** A sum of Go ints: exact, so past 2^53-1 a bigint, and past int64 when the entries add up so. */
const Sum = z
  .custom<GoInteger>((v) => typeof v === 'bigint' || Number.isSafeInteger(v), { message: 'must be an integer' })
  .meta({ type: 'integer' });
/**
 * A float64 field: any finite number. Go writes an integral float64 below 1e21 as plain digits
 * (1e20 as 100000000000000000000), which parses as a bigint past 2^53-1: taken as its nearest
 * double, as Go's decoder takes it.
 */
const Cost = z
  .custom<number | bigint>((v) => (typeof v === 'number' || typeof v === 'bigint') && Number.isFinite(Number(v)), { message: 'must be a finite number' })
  .transform((v) => Number(v))
  .meta({ type: 'number', [GO_TYPE_KEY]: 'float64' });

/** Herrscher's session-name rule (manager/validate.go): what session/add accepts. */
/**
 * What an instance id may be, checked when it is set: it names the default socket
 * (`herrscher-state-<id>.sock`), so one letter or digit, then letters, digits, `_`, `.` or `-`,
 * 32 at most (with the longest default folder the path stays under sun_path's 107 bytes).
 */
export const INSTANCE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$/;

export const HomeRef = z
  .strictObject({ id: z.string(), type: z.string().describe('"category" or "forum".') })
  .meta({ id: 'HomeRef', description: 'Where sessions are created (a Discord category or forum).' });
export type HomeRef = z.infer<typeof HomeRef>;

/** Go's `Session` struct, in declaration order (= JSON key order); optional = omitempty. */
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
  consolidateEvery: Count.optional(),
  gateways: z.array(z.string()).optional(),
  participants: z.array(z.string()).optional(),
  parent: z.string().optional(),
  cost_cap: Cost.optional(),
  token_cap: Cap.optional(),
  cohort_cost_cap: Cost.optional(),
  cohort_token_cap: Cap.optional(),
  paused_reason: z.string().optional().describe('"cost", "tokens", "cohort_cost", "cohort_tokens" or empty.'),
};

/**
 * A session row of state.json. Unknown keys are kept (a newer Go daemon's fields survive us).
 */
export const Session = z.looseObject(sessionShape).meta({ id: 'Session', description: 'A session row of state.json.' });
export type Session = z.infer<typeof Session>;

/** What session/add takes: a row whose id may be given and whose incarnation is always replaced. */
export const NewSession = z
  .looseObject({
    ...sessionShape,
    name: sessionShape.name.regex(SESSION_NAME_PATTERN, 'must be 1-64 letters, digits, - or _, starting with a letter or digit'),
    channelID: sessionShape.channelID.default(''),
    type: sessionShape.type.default(''),
    cmd: sessionShape.cmd.default(''),
  })
  .meta({ id: 'NewSession', description: 'A session to add; id is assigned when absent, incarnation is always fresh.' });
export type NewSession = z.infer<typeof NewSession>;

/** One transcript line. Go writes ts, role, text always and the rest when non-zero. */
export const TranscriptEntry = z
  .strictObject({
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
  .meta({ id: 'TranscriptEntry', description: 'One transcript entry, one compact JSON line in transcripts/<name>.jsonl.' });
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
  .meta({ id: 'StateDocument', description: 'The state document, state.json.' });
export type StateDocument = z.infer<typeof StateDocument>;

/** Spend and token sums of a transcript, kept by the store and answered by transcript/usage. */
export const TranscriptUsage = z
  .object({
    entries: z.number().int().describe('Entries ever appended, including those compaction removed.'),
    cost: z.number(),
    tokens_in: Sum,
    tokens_out: Sum,
    cache_read: Sum,
    cache_create: Sum,
    dur_ms: Sum,
    firstTs: z.string().describe('ts of the first entry ever appended, or ""'),
    lastTs: z.string().describe('ts of the newest entry, or ""'),
  })
  .meta({ id: 'TranscriptUsage', description: 'Sums over every entry ever appended under a name, compacted ones included.' });
export type TranscriptUsage = z.infer<typeof TranscriptUsage>;

/** A session with what a session list shows beside it. */
export const SessionInfo = z
  .object({ session: Session, lastTs: z.string().describe('ts of the newest entry, or ""'), usage: TranscriptUsage })
  .meta({ id: 'SessionInfo', description: 'A session row with its last activity and usage.' });
export type SessionInfo = z.infer<typeof SessionInfo>;

/** How Go encodes a field: its JSON kind and whether omitempty drops the zero value. */
export type GoKind = 'string' | 'bool' | 'int' | 'uint' | 'float' | 'strings' | 'home' | 'sessions';
export interface GoField {
  readonly key: string;
  readonly kind: GoKind;
  readonly omitempty: boolean;
}

/** The Go kind of one field's schema (optional already unwrapped). */
function goKindOf(key: string, s: z.ZodType): GoKind {
  if (s instanceof z.ZodString) return 'string';
  if (s instanceof z.ZodBoolean) return 'bool';
  if (s instanceof z.ZodNumber) return s.isInt ? 'int' : 'float';
  const goType = z.globalRegistry.get(s)?.[GO_TYPE_KEY];
  if (s instanceof z.ZodPipe && goType === 'float64') return 'float';
  if (s instanceof z.ZodCustom) return goType === 'uint64' ? 'uint' : 'int';
  if (s instanceof z.ZodArray) return s.element instanceof z.ZodString ? 'strings' : 'sessions';
  if (s instanceof z.ZodNullable) return goKindOf(key, s.unwrap() as z.ZodType);
  if (s instanceof z.ZodObject) return 'home';
  throw new Error(`goFieldsOf: field ${key} has no Go kind`);
}

/** A Go struct's fields from its zod object: declaration order, and optional means omitempty. */
export function goFieldsOf(o: z.ZodObject): GoField[] {
  return Object.entries(o.shape as Record<string, z.ZodType>).map(([key, s]) => {
    const omitempty = s instanceof z.ZodOptional;
    return { key, kind: goKindOf(key, omitempty ? (s.unwrap() as z.ZodType) : s), omitempty };
  });
}

/** Go's `Session` struct, in declaration order (= JSON key order). */
export const sessionGoFields: readonly GoField[] = goFieldsOf(Session);
/** Go's `State` struct; `home` and `sessions` are never omitted. */
export const stateGoFields: readonly GoField[] = goFieldsOf(StateDocument);
/** Go's `HomeRef`: both keys always present. */
export const homeGoFields: readonly GoField[] = goFieldsOf(HomeRef);
/** Go's `TranscriptEntry`. */
export const entryGoFields: readonly GoField[] = goFieldsOf(TranscriptEntry);
