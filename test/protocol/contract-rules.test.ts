// Rules of the contract that hold across its declarations, and the value checks it declares once
// (src/protocol/model.ts, lifecycle.ts), called directly: a write is what `shutdown` refuses, Go's
// integer ranges, the cost and sum checks with their messages, the instance-id and session-name
// rules, and the Go kind of each field as goFieldsOf reads it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as z from 'zod';
import { PROTOCOL_VERSION } from '../../src/protocol/lifecycle.js';
import { goFieldsOf, HomeRef, INSTANCE_ID_PATTERN, isGoInteger, Session, TranscriptEntry, TranscriptUsage } from '../../src/protocol/model.js';
import { methodList, methods } from '../../src/protocol/table.js';

const paramKeys = (schema: z.ZodType): string[] => {
  const inner = schema instanceof z.ZodOptional || schema instanceof z.ZodDefault ? (schema.unwrap() as z.ZodType) : schema;
  return inner instanceof z.ZodObject ? Object.keys(inner.shape) : [];
};

test('a method is a write (mutates) exactly when it may answer ShuttingDown; one with an incarnation guard or a writer key is one', () => {
  for (const def of methodList) {
    assert.equal(def.mutates === true, def.errors.includes('ShuttingDown'), `${def.method}: mutates and ShuttingDown agree`);
    const keys = paramKeys(def.params);
    if (keys.includes('incarnation') || keys.includes('writer')) assert.equal(def.mutates, true, `${def.method} takes a write's guard`);
  }
  assert.equal(methods['transcript/append'].mutates, true);
  assert.equal(methods['transcript/read'].mutates, undefined);
});

test('the protocol version is a semver', () => {
  assert.match(PROTOCOL_VERSION, /^\d+\.\d+\.\d+$/);
});

test('isGoInteger: Go int is every safe number and every int64 bigint; uint64 no negative, up to 2^64-1', () => {
  assert.equal(isGoInteger(-5, 'int'), true);
  assert.equal(isGoInteger(0, 'uint64'), true);
  assert.equal(isGoInteger(-1, 'uint64'), false);
  assert.equal(isGoInteger(2 ** 53, 'int'), false, 'an unsafe number is not taken as exact');
  assert.equal(isGoInteger(1.5, 'int'), false);
  assert.equal(isGoInteger(-(2n ** 63n), 'int'), true);
  assert.equal(isGoInteger(-(2n ** 63n) - 1n, 'int'), false);
  assert.equal(isGoInteger(2n ** 63n - 1n, 'int'), true);
  assert.equal(isGoInteger(2n ** 63n, 'int'), false);
  assert.equal(isGoInteger(2n ** 64n - 1n, 'uint64'), true);
  assert.equal(isGoInteger(2n ** 64n, 'uint64'), false);
  assert.equal(isGoInteger(0n, 'uint64'), true);
  assert.equal(isGoInteger(-1n, 'uint64'), false);
  assert.equal(isGoInteger('1', 'int'), false);
});

const issue = (schema: z.ZodType, value: unknown): string => {
  const r = schema.safeParse(value);
  assert.equal(r.success, false, JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)));
  return r.error?.issues[0]?.message ?? '';
};
const entry = { ts: 't', role: 'user', text: 'x' };

test('an entry\'s counts are Go ints and its cost a finite number, each refused with its own message', () => {
  assert.equal(issue(TranscriptEntry, { ...entry, tokens_in: 2n ** 63n }), 'must be an integer from -2^63 to 2^63-1 (Go int)');
  assert.equal(TranscriptEntry.parse({ ...entry, tokens_in: 2n ** 63n - 1n }).tokens_in, 2n ** 63n - 1n);
  assert.equal(issue(TranscriptEntry, { ...entry, cost: '1' }), 'must be a finite number');
  assert.equal(issue(TranscriptEntry, { ...entry, cost: Infinity }), 'must be a finite number');
  assert.equal(TranscriptEntry.parse({ ...entry, cost: 10n ** 20n }).cost, 1e20, 'a bigint cost is taken as its nearest double');
  assert.equal(TranscriptEntry.parse({ ...entry, cost: 0.25 }).cost, 0.25);
});

test('a session\'s token caps are Go uint64: no negative, up to 2^64-1, with their message', () => {
  assert.equal(issue(Session, { name: 'a', channelID: '', type: '', cmd: '', token_cap: -1 }), 'must be an integer from 0 to 2^64-1 (Go uint64)');
  assert.equal(Session.parse({ name: 'a', channelID: '', type: '', cmd: '', token_cap: 2n ** 64n - 1n }).token_cap, 2n ** 64n - 1n);
  assert.equal(Session.parse({ name: 'a', channelID: '', type: '', cmd: '', token_cap: 0 }).token_cap, 0);
});

test('usage sums are exact integers of any size; a fraction is refused', () => {
  const usage = { entries: 1, cost: 0, tokens_in: 0, tokens_out: 0, cache_read: 0, cache_create: 0, dur_ms: 0, firstTs: '', lastTs: '' };
  assert.equal(TranscriptUsage.parse({ ...usage, tokens_in: 2n ** 70n }).tokens_in, 2n ** 70n);
  assert.equal(TranscriptUsage.parse({ ...usage, tokens_in: 7 }).tokens_in, 7);
  assert.equal(issue(TranscriptUsage, { ...usage, tokens_in: 1.5 }), 'must be an integer');
  assert.equal(issue(TranscriptUsage, { ...usage, tokens_in: '7' }), 'must be an integer');
});

test('an instance id: a letter or digit, then up to 31 of letters, digits, _ . -', () => {
  for (const ok of ['a', 'Z9', 'a_b.c-d', `a${'b'.repeat(31)}`]) assert.match(ok, INSTANCE_ID_PATTERN, ok);
  for (const bad of ['', '-a', '.a', `a${'b'.repeat(32)}`, 'a b', 'a/b', 'a\n', 'ab!']) assert.doesNotMatch(bad, INSTANCE_ID_PATTERN, JSON.stringify(bad));
});

test('session/add refuses a name against the rule with its message', () => {
  const r = methods['session/add'].params.safeParse({ session: { name: '-x' } });
  assert.equal(r.success, false);
  assert.equal(r.error?.issues[0]?.message, 'must be 1-64 letters, digits, - or _, starting with a letter or digit');
});

test('goFieldsOf: each field\'s Go kind and omitempty, in declaration order; a field of no Go kind is an error naming it', () => {
  const o = z.object({
    s: z.string(),
    b: z.boolean().optional(),
    i: z.number().int(),
    f: z.number(),
    u: Session.shape.token_cap,
    c: Session.shape.cost_cap,
    n: TranscriptEntry.shape.tokens_in,
    list: z.array(z.string()),
    rows: z.array(Session).nullable(),
    home: HomeRef,
  });
  assert.deepEqual(goFieldsOf(o).map((f) => `${f.key} ${f.kind}${f.omitempty ? ' omitempty' : ''}`), [
    's string', 'b bool omitempty', 'i int', 'f float', 'u uint omitempty', 'c float omitempty', 'n int omitempty',
    'list strings', 'rows sessions', 'home home',
  ]);
  assert.throws(() => goFieldsOf(z.object({ when: z.date() })), /goFieldsOf: field when has no Go kind/);
});
