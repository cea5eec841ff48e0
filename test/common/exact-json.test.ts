// Go writes int and uint64 values as plain digits; JSON.parse rounds those past 2^53-1 and
// JSON.stringify throws on a bigint. parseExactJson and stringifyExactJson carry them exactly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseExactJson, stringifyExactJson } from '../../src/common/exact-json.js';

test('integer literals past 2^53-1 parse as bigints, exactly; the rest as JSON.parse parses it', () => {
  const v = parseExactJson('{"u":18446744073709551615,"i":-9223372036854775808,"s":9007199254740991,"e":1e300,"f":12345678901234567.5,"t":"12345678901234567890","a":[9007199254740993]}');
  assert.deepEqual(v, { u: 18446744073709551615n, i: -9223372036854775808n, s: 9007199254740991, e: 1e300, f: 12345678901234567.5, t: '12345678901234567890', a: [9007199254740993n] });
});

test('an integral double past 2^53 written as digits (as Go writes 1e20) parses as a bigint: a float field converts it', () => {
  assert.equal(parseExactJson(JSON.stringify(1e20)), 10n ** 20n);
  assert.equal(parseExactJson('1e20'), 1e20);
});

test('a "__proto__" key stays a key when big integers are present', () => {
  const v = parseExactJson('{"__proto__":{"x":99999999999999999}}') as Record<string, unknown>;
  assert.deepEqual(Object.keys(v), ['__proto__']);
  assert.equal(Object.getPrototypeOf(v), Object.prototype);
});

test('invalid JSON is refused as JSON.parse refuses it, big integers or not', () => {
  assert.throws(() => parseExactJson('{"a":99999999999999999,}'), SyntaxError);
  assert.throws(() => parseExactJson('[1'), SyntaxError);
});

test('bigints are written as their digits', () => {
  assert.equal(stringifyExactJson({ a: 18446744073709551615n, b: [-(2n ** 70n)], c: 'x\u0000' }), '{"a":18446744073709551615,"b":[-1180591620717411303424],"c":"x\\u0000"}');
});

test('any JSON value with big integers survives a round trip', () => {
  const big = fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map((b) => (Number.isSafeInteger(Number(b)) && BigInt(Number(b)) === b ? Number(b) : b));
  const value = fc.letrec((tie) => ({
    v: fc.oneof({ depthSize: 'small' }, big, fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Object.is(d, -0) && !(Number.isInteger(d) && !Number.isSafeInteger(d) && Math.abs(d) < 1e21)), fc.string(), fc.boolean(), fc.constant(null),
      fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(fc.string(), tie('v'), { maxKeys: 4, noNullPrototype: true })),
  })).v;
  fc.assert(fc.property(value, (v) => {
    assert.deepEqual(parseExactJson(stringifyExactJson(v)), v);
  }));
});
