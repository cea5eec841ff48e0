// The one mapping from what a handler throws to the JSON-RPC error (src/server/to-rpc-error.ts),
// called directly: each store error kind's code and data, zod issues as the -32602 message and
// data, and the bounds on what an error reply echoes (each quoted string, each string of data,
// the message as a whole, how deep and how long data is walked).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ResponseError } from 'vscode-jsonrpc/node';
import * as z from 'zod';
import { ErrorCodes } from '../../src/protocol/errors.js';
import {
  boundedError,
  invalidParams,
  issuesOf,
  MAX_ECHOED_CHARS,
  MAX_ERROR_MESSAGE_CHARS,
  MAX_LISTED_ISSUES,
  toRpcError,
} from '../../src/server/to-rpc-error.js';
import type { StoreErrorKind } from '../../src/store/store-error.js';
import { StoreError } from '../../src/store/store-error.js';

/** `data` as the client gets it: JSON (the bounded copy is built on null-prototype objects). */
const wire = (data: unknown): unknown => JSON.parse(JSON.stringify(data)) as unknown;

const zodError = (schema: z.ZodType, value: unknown): z.ZodError => {
  const r = schema.safeParse(value);
  assert.equal(r.success, false, 'the value fails the schema');
  return r.error as z.ZodError;
};

test('each store error kind maps to its code; invalid-name and invalid-input carry issues, the others their own data', () => {
  const expected: Record<StoreErrorKind, number> = {
    exists: -32010,
    'unknown-session': -32011,
    'invalid-name': -32602,
    'invalid-input': -32602,
    conflict: -32050,
    io: -32020,
    locked: -32060,
    binding: -32020,
    closed: -32030,
  };
  for (const [kind, code] of Object.entries(expected) as [StoreErrorKind, number][]) {
    const { error, unexpected } = toRpcError(new StoreError(kind, `the ${kind} message`, { code: 'EX' }));
    assert.equal(error.code, code, kind);
    assert.equal(error.message, `the ${kind} message`, kind);
    assert.equal(unexpected, false, kind);
    if (kind === 'invalid-name') assert.deepEqual(wire(error.data), { issues: [{ path: ['name'], message: 'the invalid-name message' }] });
    else if (kind === 'invalid-input') assert.deepEqual(wire(error.data), { issues: [{ path: [], message: 'the invalid-input message' }] });
    else assert.deepEqual(wire(error.data), { code: 'EX' }, kind);
  }
  assert.equal(toRpcError(new StoreError('conflict', 'c')).error.data, undefined, 'no data stays no data');
});

test('a ResponseError passes with its code, message and data; anything else is -32603 "internal error", unexpected, with nothing of it', () => {
  const passed = toRpcError(new ResponseError(ErrorCodes.RequestCancelled, 'cancelled', { why: 'asked' }));
  assert.equal(passed.unexpected, false);
  assert.equal(passed.error.code, ErrorCodes.RequestCancelled);
  assert.equal(passed.error.message, 'cancelled');
  assert.deepEqual(wire(passed.error.data), { why: 'asked' });
  for (const thrown of [new Error('/home/u/secret/path: boom'), 'a string', undefined]) {
    const { error, unexpected } = toRpcError(thrown);
    assert.equal(unexpected, true);
    assert.equal(error.code, ErrorCodes.InternalError);
    assert.equal(error.message, 'internal error');
    assert.equal(error.data, undefined);
  }
});

test('invalidParams: the first issue\'s path and message, how many more, and the issues (symbols dropped from paths) in data', () => {
  const schema = z.strictObject({ a: z.strictObject({ b: z.number() }), c: z.string(), d: z.boolean() });
  const err = invalidParams(zodError(schema, { a: { b: 'x' }, c: 1, d: 2 }));
  assert.equal(err.code, ErrorCodes.InvalidParams);
  assert.match(err.message, /^invalid params: a\.b: [^()]+ \(and 2 more\)$/);
  const issues = (err.data as { issues: { path: unknown[]; message: string }[] }).issues;
  assert.deepEqual(issues.map((i) => i.path), [['a', 'b'], ['c'], ['d']]);
  assert.ok(issues.every((i) => i.message.length > 0));

  const rootError = zodError(z.string(), 1);
  assert.equal(invalidParams(rootError).message, `invalid params: ${rootError.issues[0]?.message}`, 'an issue at the root names no path and counts no more');

  const sym = Symbol('s');
  const withSymbol = new z.ZodError([{ code: 'custom', path: ['x', sym, 0], message: 'bad', input: undefined }]);
  assert.deepEqual(issuesOf(withSymbol), [{ path: ['x', 0], message: 'bad' }]);
  assert.equal(invalidParams(new z.ZodError([])).message, 'invalid params: invalid', 'no issue at all still says invalid');
});

test(`invalidParams lists at most ${MAX_LISTED_ISSUES} issues and counts the rest in the message`, () => {
  const many = z.array(z.string());
  const err = invalidParams(zodError(many, Array.from({ length: MAX_LISTED_ISSUES + 5 }, (_, i) => i)));
  assert.equal((err.data as { issues: unknown[] }).issues.length, MAX_LISTED_ISSUES);
  assert.match(err.message, new RegExp(`\\(and ${MAX_LISTED_ISSUES + 4} more\\)$`));
  const exact = invalidParams(zodError(many, Array.from({ length: MAX_LISTED_ISSUES }, (_, i) => i)));
  assert.equal((exact.data as { issues: unknown[] }).issues.length, MAX_LISTED_ISSUES);
});

test(`boundedError: a message of ${MAX_ECHOED_CHARS} characters or less is left whole, quotes and all`, () => {
  const quoted = `"${'q'.repeat(MAX_ECHOED_CHARS - 2)}"`;
  assert.equal(quoted.length, MAX_ECHOED_CHARS);
  assert.equal(boundedError(1, quoted, undefined).message, quoted);
  assert.equal(boundedError(1, quoted, undefined).data, undefined);
  assert.equal(boundedError(7, 'short', undefined).code, 7);
});

test(`boundedError: a longer message keeps each quoted string to ${MAX_ECHOED_CHARS} characters and itself to ${MAX_ERROR_MESSAGE_CHARS}`, () => {
  const fits = `"${'a'.repeat(MAX_ECHOED_CHARS)}"`;
  const over = `"${'b'.repeat(MAX_ECHOED_CHARS + 1)}"`;
  const escaped = `"${'\\"'.repeat(MAX_ECHOED_CHARS)}"`;
  const message = `unknown key ${fits} and ${over} and ${escaped} end`;
  assert.equal(
    boundedError(1, message, undefined).message,
    `unknown key ${fits} and "${'b'.repeat(MAX_ECHOED_CHARS)}…" and "${'\\"'.repeat(MAX_ECHOED_CHARS / 2)}…" end`,
  );
  const unquoted = 'u'.repeat(MAX_ERROR_MESSAGE_CHARS + 10);
  assert.equal(boundedError(1, unquoted, undefined).message, `${'u'.repeat(MAX_ERROR_MESSAGE_CHARS)}…`);
  const justFits = 'v'.repeat(MAX_ERROR_MESSAGE_CHARS);
  assert.equal(boundedError(1, justFits, undefined).message, justFits);
});

test('boundedError: data strings are cut, a message in data is bounded as a message, deep data and long lists are cut', () => {
  const long = 'x'.repeat(MAX_ECHOED_CHARS + 50);
  const atBound = 'y'.repeat(MAX_ECHOED_CHARS);
  let deep: unknown = 'bottom';
  for (let i = 0; i < 10; i++) deep = { d: deep };
  const data = {
    [long]: long,
    atBound,
    n: 42,
    t: true,
    z: null,
    issues: Array.from({ length: MAX_LISTED_ISSUES + 3 }, (_, i) => ({ path: [long, i], message: long })),
    deep,
  };
  const out = wire(boundedError(1, 'm', data).data) as Record<string, unknown>;
  const cutLong = `${'x'.repeat(MAX_ECHOED_CHARS)}…`;
  assert.equal(out[cutLong], cutLong, 'a key and its string value are cut');
  assert.equal(out.atBound, atBound);
  assert.equal(out.n, 42);
  assert.equal(out.t, true);
  assert.equal(out.z, null);
  const issues = out.issues as { path: unknown[]; message: string }[];
  assert.equal(issues.length, MAX_LISTED_ISSUES);
  assert.deepEqual(issues[1]?.path, [cutLong, 1]);
  assert.equal(issues[0]?.message, long, 'a "message" in data is a message: whole up to its own bound');
  // Walked 8 levels deep (data itself is the first): what lies below is null.
  let level: unknown = out.deep;
  for (let i = 0; i < 6; i++) level = (level as { d: unknown }).d;
  assert.deepEqual(level, { d: null });
  assert.equal(boundedError(1, 'm', long).data, long, 'a string as the whole of data is bounded as a message');
  assert.equal(boundedError(1, 'm', 5).data, 5);
  assert.deepEqual(wire(boundedError(1, 'm', [long]).data), [cutLong]);
});

test('boundedError keeps a "__proto__" key of data as a key', () => {
  const data = JSON.parse('{"__proto__": "p", "k": 1}') as Record<string, unknown>;
  const out = boundedError(1, 'm', data).data as Record<string, unknown>;
  assert.deepEqual(Object.keys(out), ['__proto__', 'k']);
  assert.equal(Object.getOwnPropertyDescriptor(out, '__proto__')?.value, 'p');
});
