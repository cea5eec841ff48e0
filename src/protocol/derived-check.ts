// A check of a method's params derived from its zod schema, for the server's hot path. zod stays
// the contract: the derived check knows a few of zod's schema kinds (strict objects, strings with
// regexes, numbers with integer and bound checks, booleans, optional, default, custom checks and
// transforms after them) and reads what each one requires from the schema itself, so nothing is
// declared twice. It answers only what it can vouch for: params it accepts get the output zod
// would give (the same keys in the same order, defaults filled in, transforms applied); anything
// else, valid or not, is UNDECIDED and goes to zod, which then accepts or words the error. A
// schema with any kind it does not know derives no check at all. It reads zod 4's internals
// (`_zod.def`), so a zod upgrade that changes them is caught by the test that holds every derived
// check equal to zod over generated valid and hostile params (test/protocol/derived-check.test.ts).
import type * as z from 'zod';

/** The answer for params the derived check cannot vouch for: zod decides them. */
export const UNDECIDED: unique symbol = Symbol('undecided');
export type Undecided = typeof UNDECIDED;

/** The parsed params (zod's output), or UNDECIDED. */
export type DerivedCheck = (value: unknown) => unknown;

/** What a field does when its key is absent from an object. */
type Absent = { kind: 'required' } | { kind: 'omit' } | { kind: 'default'; value: () => unknown };

interface Derived {
  check: DerivedCheck;
  absent: Absent;
}

/** The parts of zod's schema internals read here (zod 4's `_zod.def`). */
interface Def {
  readonly type: string;
  readonly checks?: readonly { _zod: { def: CheckDef } }[];
  readonly coerce?: boolean;
  /** Set on a schema that is itself a check: zod 4's formats (z.int(), z.int32(), z.email()…) and z.custom. */
  readonly check?: string;
  readonly shape?: Record<string, z.ZodType>;
  readonly catchall?: z.ZodType;
  readonly innerType?: z.ZodType;
  readonly defaultValue?: unknown;
  readonly fn?: (v: unknown) => unknown;
  readonly in?: z.ZodType;
  readonly out?: z.ZodType;
  readonly transform?: (v: unknown, payload: unknown) => unknown;
}

interface CheckDef {
  readonly check: string;
  readonly when?: unknown;
  readonly format?: string;
  readonly pattern?: RegExp;
  readonly value?: unknown;
  readonly inclusive?: boolean;
}

/** Thrown inside derive for a kind (or a check) it does not know: no derived check then. */
class Unknown extends Error {}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;
const required: Absent = { kind: 'required' };

/**
 * The check derived from `schema`, or undefined when the schema uses a kind this file does not
 * know (then zod alone checks those params). Built once per schema by its caller.
 */
export function deriveCheck(schema: z.ZodType): DerivedCheck | undefined {
  try {
    const d = derive(schema);
    return d.absent.kind === 'required' ? d.check : undefined;
  } catch (err) {
    if (err instanceof Unknown) return undefined;
    throw err;
  }
}

function derive(schema: z.ZodType): Derived {
  const def = defOf(schema);
  if (def.coerce) throw new Unknown(def.type);
  if (def.check !== undefined && def.type !== 'custom') throw new Unknown(`${def.type} format ${def.check}`);
  switch (def.type) {
    case 'object':
      return { check: objectCheck(def), absent: required };
    case 'string':
      return { check: stringCheck(def), absent: required };
    case 'number':
      return { check: numberCheck(def), absent: required };
    case 'boolean':
      noChecks(def);
      return { check: (v) => (typeof v === 'boolean' ? v : UNDECIDED), absent: required };
    case 'custom':
      return { check: customCheck(def), absent: required };
    case 'optional': {
      const inner = derive(def.innerType as z.ZodType);
      noChecks(def);
      if (inner.absent.kind !== 'required') throw new Unknown('optional of an optional or a default');
      return { check: inner.check, absent: { kind: 'omit' } };
    }
    case 'default': {
      const inner = derive(def.innerType as z.ZodType);
      noChecks(def);
      if (inner.absent.kind !== 'required') throw new Unknown('default of an optional or a default');
      // zod's getter: a fresh (shallow-cloned) default per parse.
      const value = (): unknown => def.defaultValue;
      const check = inner.check;
      return { check: (v) => {
        const out = check(v);
        return out === undefined ? value() : out;
      }, absent: { kind: 'default', value } };
    }
    case 'pipe':
      return pipeCheck(def);
    default:
      throw new Unknown(def.type);
  }
}

function noChecks(def: Def): void {
  if (def.checks !== undefined && def.checks.length > 0) throw new Unknown(`checks on ${def.type}`);
}

/** The checks of `def`, each known (else Unknown) and unconditional. */
function checksOf(def: Def): CheckDef[] {
  return (def.checks ?? []).map((c) => {
    const check = c._zod.def;
    if (check.when !== undefined) throw new Unknown('a conditional check');
    return check;
  });
}

function stringCheck(def: Def): DerivedCheck {
  const patterns = checksOf(def).map((c) => {
    if (c.check !== 'string_format' || c.format !== 'regex' || !(c.pattern instanceof RegExp)) throw new Unknown(`string check ${c.check}`);
    return c.pattern;
  });
  if (patterns.length === 0) return (v) => (typeof v === 'string' ? v : UNDECIDED);
  return (v) => {
    if (typeof v !== 'string') return UNDECIDED;
    for (const p of patterns) {
      p.lastIndex = 0;
      if (!p.test(v)) return UNDECIDED;
    }
    return v;
  };
}

function numberCheck(def: Def): DerivedCheck {
  const tests = checksOf(def).map((c): ((n: number) => boolean) => {
    if (c.check === 'number_format' && c.format === 'safeint') return Number.isSafeInteger;
    const bound = c.value;
    if (typeof bound !== 'number') throw new Unknown(`number check ${c.check}`);
    if (c.check === 'greater_than') return c.inclusive ? (n) => n >= bound : (n) => n > bound;
    if (c.check === 'less_than') return c.inclusive ? (n) => n <= bound : (n) => n < bound;
    throw new Unknown(`number check ${c.check}`);
  });
  return (v) => {
    if (typeof v !== 'number' || !Number.isFinite(v)) return UNDECIDED;
    for (const t of tests) if (!t(v)) return UNDECIDED;
    return v;
  };
}

/**
 * A z.custom: its own function decides, for a value that is not an object (a custom check may
 * accept any value, and a nested one would escape the server's depth bound, which zod's path runs).
 */
function customCheck(def: Def): DerivedCheck {
  noChecks(def);
  const fn = def.fn;
  if (typeof fn !== 'function') throw new Unknown('custom without a function');
  return (v) => {
    if ((typeof v === 'object' && v !== null) || typeof v === 'function') return UNDECIDED;
    const ok = fn(v);
    return ok instanceof Promise || !ok ? UNDECIDED : v;
  };
}

/** A schema then a transform of its output (`.transform(f)`), as zod runs it. */
function pipeCheck(def: Def): Derived {
  noChecks(def);
  const first = derive(def.in as z.ZodType);
  const out = defOf(def.out as z.ZodType);
  if (out.type !== 'transform' || typeof out.transform !== 'function') throw new Unknown(`pipe into ${out.type}`);
  noChecks(out);
  if (first.absent.kind !== 'required') throw new Unknown('a pipe from an optional or a default');
  const transform = out.transform;
  const check = first.check;
  return {
    check: (v) => {
      const value = check(v);
      if (value === UNDECIDED) return UNDECIDED;
      // The payload zod hands a transform: an issue it adds means zod refuses.
      const payload = { value, issues: [] as unknown[], addIssue: (issue: unknown) => payload.issues.push(issue) };
      const result = transform(value, payload);
      return result instanceof Promise || payload.issues.length > 0 ? UNDECIDED : result;
    },
    absent: required,
  };
}

/**
 * A strict object (z.strictObject: an unknown key refuses) of known fields, read only when it is
 * a plain object; its output is a new object with the fields in the schema's order, as zod builds.
 * Built as code, as zod builds its own fast path: each key a literal, so the output gets its
 * fields by stores V8 can cache (a loop over the keys made every store a generic one and the whole
 * check slower than zod's).
 */
function objectCheck(def: Def): DerivedCheck {
  noChecks(def);
  if (def.catchall === undefined || defOf(def.catchall).type !== 'never') throw new Unknown('an object that is not strict');
  const fields = Object.entries(def.shape ?? {}).map(([key, schema]) => {
    // A key an object inherits would be "present" to zod's `in` and absent to hasOwn.
    if (key in Object.prototype || key === '__proto__') throw new Unknown(`the key ${key}`);
    return { key, ...derive(schema) };
  });
  const lines = fields.map((f, i) => {
    const k = JSON.stringify(f.key);
    const absent = f.absent.kind === 'required' ? ' else return U;' : f.absent.kind === 'default' ? ` else out[${k}] = d[${i}]();` : '';
    return `  if (Object.hasOwn(v, ${k})) { const r = c${i}(v[${k}]); if (r === U) return U; out[${k}] = r; }${absent}`;
  });
  const code = [
    'return function derivedObjectCheck(v) {',
    '  if (typeof v !== "object" || v === null || Object.getPrototypeOf(v) !== Object.prototype) return U;',
    '  for (const k in v) if (!known.has(k)) return U;',
    '  const out = {};',
    ...lines,
    '  return out;',
    '};',
  ].join('\n');
  const defaults = fields.map((f) => (f.absent.kind === 'default' ? f.absent.value : undefined));
  // The code holds the schema's keys only as JSON string literals; the checks are passed in.
  const build = new Function('U', 'known', 'd', ...fields.map((_f, i) => `c${i}`), code) as (...args: unknown[]) => DerivedCheck;
  return build(UNDECIDED, new Set(fields.map((f) => f.key)), defaults, ...fields.map((f) => f.check));
}
