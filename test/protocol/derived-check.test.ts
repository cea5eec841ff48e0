// The params checks derived from the zod schemas (protocol/derived-check.ts) against zod itself:
// over params generated from each schema (valid ones) and those changed at a random place
// (hostile: a wrong value, a missing or unknown key, "__proto__", a bigint, -0, NaN, whole
// values of another kind), the derived check accepts exactly what zod accepts, and its output is
// zod's, keys in the same order. What it does not accept goes to zod, so the error is zod's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import * as z from 'zod';
import { deriveCheck, UNDECIDED } from '../../src/protocol/derived-check.js';
import { methodList } from '../../src/protocol/table.js';

interface Def {
  type: string;
  checks?: { _zod: { def: { check: string; format?: string; pattern?: RegExp; value?: number; inclusive?: boolean } } }[];
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
}
const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** Values of every kind a JSON message (parsed exactly) can hold, and a few no message can (NaN, Infinity; never undefined, which no message holds). */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue(),
  fc.bigInt(),
  fc.constantFrom(-0, 0, 1, -1, 1.5, 2 ** 53, -(2 ** 53), 1e21, Number.NaN, Number.POSITIVE_INFINITY, '', 'x'.repeat(65), true, false, null, [], {}),
);

/** Params the schema may accept: each field of its kind, optional ones present or not. */
function validOf(schema: z.ZodType): fc.Arbitrary<unknown> {
  const def = defOf(schema);
  switch (def.type) {
    case 'object': {
      const shape = def.shape ?? {};
      const requiredKeys = Object.keys(shape).filter((k) => !['optional', 'default'].includes(defOf(shape[k] as z.ZodType).type));
      return fc.record(Object.fromEntries(Object.entries(shape).map(([k, s]) => [k, validOf(s)])), { requiredKeys, noNullPrototype: true });
    }
    case 'string': {
      const pattern = def.checks?.[0]?._zod.def.pattern;
      return pattern ? fc.oneof(fc.stringMatching(pattern), fc.string()) : fc.string({ unit: 'grapheme' });
    }
    case 'number': {
      const min = def.checks?.find((c) => c._zod.def.check === 'greater_than')?._zod.def.value;
      return fc.oneof(fc.integer({ min: min ?? -1000, max: 1e6 }), fc.maxSafeInteger(), fc.double({ noNaN: true, noDefaultInfinity: true }));
    }
    case 'boolean':
      return fc.boolean();
    case 'custom':
      // Values of every kind a custom check might take, kept to those it does: with several
      // optional custom fields (transcript/append's entry has five) unfiltered values left some
      // runs with no valid params at all.
      return fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.bigInt(), fc.double(), fc.string()).filter((v) => schema.safeParse(v).success);
    case 'optional':
    case 'default':
      return validOf(def.innerType as z.ZodType);
    case 'pipe':
      return validOf(def.in as z.ZodType);
    default:
      return anyValue;
  }
}

/** Sets `key` as an own, enumerable key (so "__proto__" is a key, as JSON.parse makes it). */
function setOwn(o: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

/** `v` changed at one place picked by `pick`: a value replaced, a key removed or added. */
function changed(v: unknown, pick: number[], replacement: unknown, how: number, key: string): unknown {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return replacement;
  const copy: Record<string, unknown> = {};
  for (const k of Object.keys(v)) setOwn(copy, k, (v as Record<string, unknown>)[k]);
  const keys = Object.keys(copy);
  const [first, ...rest] = pick;
  if (keys.length === 0 || first === undefined || how === 2) {
    setOwn(copy, key, replacement);
    return copy;
  }
  const k = keys[first % keys.length] as string;
  if (how === 1 && rest.length === 0) delete copy[k];
  else setOwn(copy, k, rest.length === 0 ? replacement : changed(copy[k], rest, replacement, how, key));
  return copy;
}

/** The same values with the same keys in the same order. */
function sameOutput(a: unknown, b: unknown): boolean {
  const text = (v: unknown): string => JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? `${x}n` : x)) ?? 'undefined';
  return isDeepStrictEqual(a, b) && text(a) === text(b);
}

const derived = methodList
  .filter((m) => !m.notification)
  .map((m) => ({ method: m.method, schema: m.params as z.ZodType, check: deriveCheck(m.params as z.ZodType) }));

test('the hot methods\' params derive a check; a schema of kinds it does not know derives none', () => {
  const names = derived.filter((d) => d.check).map((d) => d.method);
  for (const m of ['transcript/append', 'participants/append', 'transcript/read', 'session/setResumeToken']) assert.ok(names.includes(m), `${m} derives a check (${names.join(', ')})`);
  const none = derived.filter((d) => !d.check).map((d) => d.method);
  assert.ok(none.includes('state/save'), `state/save (a loose document) derives none (${none.join(', ')})`);
});

for (const { method, schema, check } of derived) {
  if (!check) continue;
  test(`${method}: the derived check accepts exactly what zod accepts, with zod's output`, () => {
    let accepted = 0;
    let refused = 0;
    const params = fc.oneof(
      { arbitrary: validOf(schema), weight: 2 },
      {
        arbitrary: fc.tuple(validOf(schema), fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), anyValue, fc.integer({ min: 0, max: 2 }), fc.constantFrom('__proto__', 'extra', 'name', 'entry', 'toString'))
          .map(([v, pick, replacement, how, key]) => changed(v, pick, replacement, how, key)),
        weight: 3,
      },
      { arbitrary: anyValue, weight: 1 },
    );
    fc.assert(
      fc.property(params, (p) => {
        const zod = schema.safeParse(p);
        const fast = check(p);
        if (zod.success) {
          assert.notEqual(fast, UNDECIDED, 'zod accepts what the derived check left to it');
          assert.ok(sameOutput(fast, zod.data), `output ${String(JSON.stringify(fast, (_k, x: unknown) => (typeof x === 'bigint' ? String(x) : x)))}`);
          accepted++;
        } else {
          assert.equal(fast, UNDECIDED, 'the derived check accepted what zod refuses');
          refused++;
        }
      }),
      { numRuns: 300 },
    );
    assert.ok(accepted > 0 && refused > 0, `both kinds were generated (${accepted} accepted, ${refused} refused)`);
  });
}

// Beyond today's contract: the promises for the kinds a schema may grow into.

test('a schema with a kind or a check the derived check does not know derives none', () => {
  const unknown: [string, z.ZodType][] = [
    ['a coerced number', z.strictObject({ n: z.coerce.number() })],
    ['a number format schema (int32)', z.strictObject({ n: z.int32() })],
    ['a number format schema (int)', z.strictObject({ n: z.int() })],
    ['a string format schema (email)', z.strictObject({ s: z.email() })],
    ['a string length check', z.strictObject({ s: z.string().min(3) })],
    ['a string format other than a regex (email)', z.strictObject({ s: z.string().email() })],
    ['a conditional regex', z.strictObject({ s: z.string().regex(/^a$/, { when: () => false } as never) })],
    ['a number check other than bounds and safeint', z.strictObject({ n: z.number().multipleOf(2) })],
    ['a refined boolean', z.strictObject({ b: z.boolean().refine((b) => b) })],
    ['an optional of an optional', z.strictObject({ s: z.string().optional().optional() })],
    ['a default of an optional', z.strictObject({ s: z.string().optional().default('x') })],
    ['a pipe into a schema, not a transform', z.strictObject({ s: z.string().pipe(z.string()) })],
    ['a pipe from an optional', z.strictObject({ s: z.string().optional().transform((s) => s ?? '') })],
    ['an object that strips unknown keys', z.object({ s: z.string() })],
    ['an object that keeps unknown keys', z.looseObject({ s: z.string() })],
    ['a key every object inherits', z.strictObject({ toString: z.string() })],
    ['the key __proto__', z.strictObject({ ['__proto__']: z.string() })],
    ['an array', z.strictObject({ a: z.array(z.string()) })],
  ];
  for (const [what, schema] of unknown) assert.equal(deriveCheck(schema), undefined, what);
});

test('a custom check decides only values that are not objects: an object or an array goes to zod (and the depth bound before it)', () => {
  const check = deriveCheck(z.strictObject({ c: z.custom<unknown>(() => true) }));
  assert.ok(check);
  assert.deepEqual(check({ c: 5 }), { c: 5 });
  for (const c of [{}, [], { a: [[1]] }]) assert.equal(check({ c }), UNDECIDED, JSON.stringify(c));
});

test('known kinds outside the contract (bounds, regexes, defaults, transforms with issues) agree with zod', () => {
  const schema = z.strictObject({
    s: z.string().regex(/^[0-9a]+$/).optional(),
    n: z.number().int().gt(0).lte(10).optional(),
    m: z.number().gte(-1).lt(1).optional(),
    f: z.number().optional(),
    b: z.boolean().optional(),
    d: z.custom<unknown>(() => true).default(7),
    t: z.string().transform((s, ctx) => {
      if (s === 'bad') ctx.addIssue({ code: 'custom', message: 'refused' });
      return s.length;
    }).optional(),
  });
  const check = deriveCheck(schema);
  assert.ok(check);
  const field = fc.constantFrom<unknown>(0, 1, 5, 10, 11, -1, -0.5, 0.5, 1.5, -2, 2 ** 60, Number.NaN, Number.POSITIVE_INFINITY, '5', 'a5', 'b', '', 'bad', 'good', true, false, null, undefined);
  let accepted = 0;
  const agrees = (p: Record<string, unknown>): void => {
    const zod = schema.safeParse(p);
    const fast = check(p);
    if (!zod.success) assert.equal(fast, UNDECIDED, `zod refuses ${JSON.stringify(p)}`);
    else if (fast !== UNDECIDED) {
      assert.ok(sameOutput(fast, zod.data), `${JSON.stringify(fast)} vs zod's ${JSON.stringify(zod.data)}`);
      accepted++;
    } else {
      // Only an optional key given as undefined (never in a JSON message) is left to zod here:
      // every other value zod accepts is of a kind the check knows.
      assert.ok(Object.entries(p).some(([k, v]) => v === undefined && k !== 'd'), `left to zod: ${JSON.stringify(p)}`);
    }
  };
  for (const p of [{}, { d: undefined }, { n: 10 }, { n: 1, m: -1 }, { m: 0.5, f: 2 ** 60 }, { t: 'good', s: 'a5' }, { t: 'bad' }, { n: 0 }, { m: 1 }]) agrees(p);
  fc.assert(
    fc.property(fc.dictionary(fc.constantFrom('s', 'n', 'm', 'f', 'b', 'd', 't'), field, { noNullPrototype: true }), (p) => agrees(p)),
    { numRuns: 1000 },
  );
  assert.ok(accepted > 0, 'some params were accepted');
});
