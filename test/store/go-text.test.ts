// Go's reading of bytes, as the differential fuzz against Go found it: a byte that starts no
// valid UTF-8 sequence is one U+FFFD (utf8.DecodeRune).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { goDecodeUtf8 } from '../../src/store/go-text.js';

const R = '\ufffd';

test('invalid UTF-8 reads as one U+FFFD per byte Go rejects, where Buffer.toString gives one per truncated sequence', () => {
  const cases: [number[], string][] = [
    [[0xe2, 0x82], R + R], // a truncated 3-byte sequence: Go 2, Buffer.toString 1
    [[0xf0, 0x9f, 0x98], R + R + R],
    [[0xff, 0xfe, 0x61], `${R}${R}a`],
    [[0xed, 0xa0, 0x80], R + R + R], // an encoded surrogate
    [[0xc0, 0x80], R + R], // overlong NUL
    [[0xf4, 0x90, 0x80, 0x80], R + R + R + R], // past U+10FFFF
    [[0x61, 0xe2, 0x82, 0xac, 0xe2], `a€${R}`],
    [[0xf0, 0x9f, 0x98, 0x80], '😀'],
  ];
  for (const [bytes, want] of cases) assert.equal(goDecodeUtf8(Buffer.from(bytes)), want, Buffer.from(bytes).toString('hex'));
  assert.equal(Buffer.from([0xe2, 0x82]).toString('utf8'), R, 'the difference this function exists for');
});

test('valid UTF-8 reads as Buffer.toString reads it', () => {
  fc.assert(fc.property(fc.string({ unit: 'grapheme' }), (s) => goDecodeUtf8(Buffer.from(s, 'utf8')) === s));
});

test('any bytes read as a well-formed string whose U+FFFDs stand one for each rejected byte', () => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
    const s = goDecodeUtf8(bytes);
    assert.ok(s.isWellFormed());
    // Re-encoded, every U+FFFD that was not in the input is 3 bytes for 1: lengths add up.
    const kept = Buffer.from(s.replaceAll(R, ''), 'utf8').length;
    const replaced = s.length - s.replaceAll(R, '').length;
    assert.ok(kept + replaced <= bytes.length + 2 * replaced);
  }));
});
