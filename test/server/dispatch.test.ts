// The last link of the chain (src/server/dispatch.ts) with the checks before a handler runs, each
// called directly: how deep params may nest (nesting.ts) and the path a refusal names, the
// contract's parse (-32602), and the "__proto__" keys zod drops, put back (proto-keys.ts). The
// handler runs over a stub context that records what it was given.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CancellationToken, ResponseError } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../../src/protocol/errors.js';
import type { ServerContext } from '../../src/server/bind.js';
import { dispatch, isMethodName } from '../../src/server/dispatch.js';
import { dispatchHandler } from '../../src/server/handler.js';
import { MAX_PARAMS_DEPTH, tooDeep } from '../../src/server/nesting.js';
import { restoreProtoKeys } from '../../src/server/proto-keys.js';

/** A context whose store's addSession answers the row it was given, and whose unsubscribe records its id. */
function stubContext() {
  const added: unknown[] = [];
  const unsubscribed: string[] = [];
  const ctx = {
    store: { addSession: async (row: unknown) => (added.push(row), row) },
    unsubscribe: (id: string) => (unsubscribed.push(id), true),
  } as unknown as ServerContext;
  return { ctx, added, unsubscribed };
}

/** An array `levels` deep (the outermost counts as 1), holding `leaf`. */
const nested = (levels: number, leaf: unknown = 1): unknown => {
  let v: unknown = leaf;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};

const refusal = async (p: Promise<unknown>): Promise<ResponseError<{ issues: { path: unknown[]; message: string }[] }>> => {
  const err = await p.then(() => assert.fail('answered'), (e: unknown) => e);
  assert.ok(err instanceof ResponseError, String(err));
  return err as ResponseError<{ issues: { path: unknown[]; message: string }[] }>;
};

test('isMethodName: the table\'s names only, never an inherited property', () => {
  assert.equal(isMethodName('session/add'), true);
  assert.equal(isMethodName('exit'), true);
  for (const n of ['session/nope', 'toString', '__proto__', 'constructor', 'hasOwnProperty']) assert.equal(isMethodName(n), false, n);
});

test('dispatch runs the method\'s handler with the parsed params (defaults filled in) and answers its result', async () => {
  const { ctx, unsubscribed } = stubContext();
  assert.deepEqual(await dispatch('watch/unsubscribe', { subscription: 'w7' }, ctx), { unsubscribed: true });
  assert.deepEqual(unsubscribed, ['w7']);
});

test('dispatchHandler, the chain\'s last link, runs the call\'s method with its params and answers its result', async () => {
  const { ctx, unsubscribed } = stubContext();
  const last = dispatchHandler(ctx);
  assert.deepEqual(await last({ method: 'watch/unsubscribe', params: { subscription: 'w9' }, token: CancellationToken.None, write: false }), { unsubscribed: true });
  assert.deepEqual(unsubscribed, ['w9']);
});

test('dispatch: params that fail the schema are -32602 naming the field, and the handler never runs', async () => {
  const { ctx, unsubscribed } = stubContext();
  const err = await refusal(dispatch('watch/unsubscribe', { subscription: 5 }, ctx));
  assert.equal(err.code, ErrorCodes.InvalidParams);
  assert.deepEqual(err.data?.issues.map((i) => i.path), [['subscription']]);
  assert.deepEqual(unsubscribed, []);
});

test(`dispatch: params nested past ${MAX_PARAMS_DEPTH} levels are -32602 naming where, before the schema sees them`, async () => {
  const { ctx, unsubscribed } = stubContext();
  const err = await refusal(dispatch('watch/unsubscribe', { subscription: 'w1', x: { y: nested(MAX_PARAMS_DEPTH) } }, ctx));
  assert.equal(err.code, ErrorCodes.InvalidParams);
  const message = `params may nest at most ${MAX_PARAMS_DEPTH} levels of arrays and objects. Got more under x.y.0.0.0.0.0.0…`;
  assert.equal(err.message, `invalid params: ${message}`);
  assert.deepEqual(err.data, { issues: [{ path: ['x', 'y', 0, 0, 0, 0, 0, 0], message }] });
  assert.deepEqual(unsubscribed, []);
  const whole = await refusal(dispatch('watch/unsubscribe', nested(MAX_PARAMS_DEPTH + 1), ctx));
  assert.match(whole.message, /Got more under 0\.0\.0/, 'an array as params: its indices');
});

test('tooDeep: the depth counts params itself as 1, objects and arrays alike; scalars never nest', () => {
  assert.equal(tooDeep(nested(3), 3), undefined, 'exactly max deep');
  assert.deepEqual(tooDeep(nested(4), 3), [0, 0, 0]);
  assert.equal(tooDeep({ a: { b: {} } }, 3), undefined);
  assert.deepEqual(tooDeep({ a: { b: { c: {} } } }, 3), ['a', 'b', 'c']);
  assert.deepEqual(tooDeep({ ok: [1, 2, { s: 'x' }], deep: { a: [[]] } }, 3), ['deep', 'a', 0]);
  assert.equal(tooDeep({ a: null, b: 'x'.repeat(10), c: 5 }, 1), undefined, 'null and scalars add no level');
  assert.equal(tooDeep('x', 0), undefined);
  assert.equal(tooDeep(null, 0), undefined);
  assert.deepEqual(tooDeep({}, 0), [], 'params itself too deep: an empty path');
});

test('tooDeep names the first 8 keys of the too-deep path, the deep branch wherever it is', () => {
  const deep = nested(20);
  assert.deepEqual(tooDeep({ a: 1, b: { c: [0, 1, deep] } }, 10), ['b', 'c', 2, 0, 0, 0, 0, 0]);
  assert.equal(tooDeep(nested(MAX_PARAMS_DEPTH)), undefined, `MAX_PARAMS_DEPTH (${MAX_PARAMS_DEPTH}) by default`);
  assert.deepEqual(tooDeep(nested(MAX_PARAMS_DEPTH + 1))?.length, 8);
});

test('dispatch puts back a "__proto__" key of a session row that zod dropped, as an own key', async () => {
  const { ctx, added } = stubContext();
  const raw = JSON.parse('{"session":{"name":"a","__proto__":{"x":1},"list":[{"__proto__":2}]}}') as unknown;
  await dispatch('session/add', raw, ctx);
  const row = added[0] as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(row), Object.prototype);
  assert.deepEqual(Object.getOwnPropertyDescriptor(row, '__proto__')?.value, { x: 1 });
  const inList = (row.list as Record<string, unknown>[])[0]!;
  assert.equal(Object.getOwnPropertyDescriptor(inList, '__proto__')?.value, 2, 'in an array too');
  assert.equal(row.name, 'a');
});

test('restoreProtoKeys leaves what zod kept alone, and walks an array only beside an array', () => {
  const raw = JSON.parse('{"__proto__":1,"a":{"__proto__":2},"s":"x"}') as Record<string, unknown>;
  const own = Object.create(null) as Record<string, unknown>;
  Object.defineProperty(own, '__proto__', { value: 'kept', enumerable: true, writable: true, configurable: true });
  const parsed: Record<string, unknown> = { a: own, s: 'x' };
  restoreProtoKeys(raw, parsed);
  assert.equal(Object.getOwnPropertyDescriptor(parsed, '__proto__')?.value, 1);
  assert.equal(Object.getOwnPropertyDescriptor(own, '__proto__')?.value, 'kept', 'an own key already there is not replaced');
  assert.equal(Object.getPrototypeOf(own), null, 'nor its prototype');
  const arrays = JSON.parse('[{"__proto__":1}]') as unknown[];
  const notArray = { 0: {} };
  restoreProtoKeys(arrays, notArray);
  assert.equal(Object.getOwnPropertyDescriptor(notArray[0], '__proto__'), undefined, 'an array beside an object: not walked');
  const beside = [{}, {}];
  restoreProtoKeys(JSON.parse('[{}, {"__proto__":1}]'), beside);
  assert.equal(Object.getOwnPropertyDescriptor(beside[1], '__proto__')?.value, 1, 'an array beside an array: each element');
  assert.equal(Object.getOwnPropertyDescriptor(beside[0], '__proto__'), undefined);
});

test('restoreProtoKeys undoes a "__proto__" that was assigned (which set the prototype): a plain object with the key', () => {
  const parsed: Record<string, unknown> = { name: 'a' };
  // What an assignment of the key does: the value becomes the prototype, no key is made.
  parsed['__proto__'] = { inherited: true };
  assert.equal(parsed.inherited, true);
  restoreProtoKeys(JSON.parse('{"name":"a","__proto__":{"x":1}}'), parsed);
  assert.equal(Object.getPrototypeOf(parsed), Object.prototype);
  assert.equal(parsed.inherited, undefined);
  assert.deepEqual(Object.getOwnPropertyDescriptor(parsed, '__proto__')?.value, { x: 1 });
});

test('restoreProtoKeys stops 64 levels down', () => {
  const depth = (levels: number): { raw: unknown; parsed: Record<string, unknown>; bottom: () => object } => {
    let raw: unknown = JSON.parse('{"__proto__":1}');
    let parsed: Record<string, unknown> = {};
    const bottom = parsed;
    for (let i = 0; i < levels; i++) {
      raw = { k: raw };
      parsed = { k: parsed };
    }
    return { raw, parsed, bottom: () => bottom };
  };
  const within = depth(64);
  restoreProtoKeys(within.raw, within.parsed);
  assert.equal(Object.getOwnPropertyDescriptor(within.bottom(), '__proto__')?.value, 1, '64 levels below: restored');
  const past = depth(65);
  restoreProtoKeys(past.raw, past.parsed);
  assert.equal(Object.getOwnPropertyDescriptor(past.bottom(), '__proto__'), undefined, '65 levels below: left');
});

test('restoreProtoKeys counts arrays as levels too: stops 64 levels down through arrays', () => {
  const depth = (levels: number): { raw: unknown; parsed: unknown; bottom: object } => {
    let raw: unknown = JSON.parse('{"__proto__":1}');
    const bottom = {};
    let parsed: unknown = bottom;
    for (let i = 0; i < levels; i++) {
      raw = [raw];
      parsed = [parsed];
    }
    return { raw, parsed, bottom };
  };
  const within = depth(64);
  restoreProtoKeys(within.raw, within.parsed);
  assert.equal(Object.getOwnPropertyDescriptor(within.bottom, '__proto__')?.value, 1, '64 arrays below: restored');
  const past = depth(65);
  restoreProtoKeys(past.raw, past.parsed);
  assert.equal(Object.getOwnPropertyDescriptor(past.bottom, '__proto__'), undefined, '65 arrays below: left');
});
