// Properties of the Go-compatible encoder (fast-check): for any entry or session, JSON.parse of the
// bytes gives the value back with zero-valued omitempty fields dropped, the bytes carry Go's
// escapes only, and our decoder agrees with our encoder.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { entryGoFields, sessionGoFields } from '../../src/protocol/model.js';
import type { GoField } from '../../src/protocol/model.js';
import { decodeStateText, decodeTranscriptLine } from '../../src/store/go-decode.js';
import { encodeGoString, encodeSession, encodeStateDocument, encodeTranscriptLine } from '../../src/store/go-json.js';
import { fromDecoded } from '../../src/store/state-document.js';

const RUNS = { numRuns: 300 };

/** Characters Go escapes or JS treats specially, mixed into otherwise arbitrary unicode. */
const special = fc.constantFrom('<', '>', '&', '\u2028', '\u2029', '"', '\\', '\u0000', '\u0008', '\u000c', '\n', '\r', '\t', '\u001f', '\u007f', '\u0085', '\ufeff', '😀', 'é');
const char = fc.oneof(special, fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }));
const str = fc.string({ unit: char, maxLength: 40 });
const cost = fc.double({ noNaN: true, noDefaultInfinity: true });
const count = fc.maxSafeNat();

/** Lone surrogates cannot be UTF-8: Go writes U+FFFD for invalid bytes, and so do we. */
const wellFormed = (s: string): string => s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

const isZero = (v: unknown): boolean => v === '' || v === 0 || v === false || (Array.isArray(v) && v.length === 0);

/** What Go writes back: known fields in struct order, omitempty zeros dropped, the rest as given. */
function expected(x: Record<string, unknown>, fields: readonly GoField[], keepUnknown: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = x[f.key];
    if (f.omitempty && (v === undefined || isZero(v))) continue;
    out[f.key] = v ?? '';
  }
  if (keepUnknown) for (const [k, v] of Object.entries(x)) if (!fields.some((f) => f.key === k)) out[k] = v;
  return out;
}

const entry = fc.record(
  { ts: str, role: str, text: str, cost, kind: str, tokens_in: count, tokens_out: count, cache_read: count, cache_create: count, dur_ms: count },
  { requiredKeys: ['ts', 'role', 'text'] },
);

test('for any transcript entry, JSON.parse of its line gives the entry back, zero usage fields dropped, keys in Go order', () => {
  fc.assert(fc.property(entry, (e) => {
    const line = encodeTranscriptLine(e);
    assert.ok(line.endsWith('\n'));
    assert.equal(line.indexOf('\n'), line.length - 1, 'one line');
    assert.ok(!/[<>&\u2028\u2029]/.test(line), 'Go escapes < > & U+2028 U+2029');
    const parsed = JSON.parse(line) as Record<string, unknown>;
    assert.deepEqual(parsed, expected(e, entryGoFields, false));
    assert.deepEqual(Object.keys(parsed), Object.keys(expected(e, entryGoFields, false)));
  }), RUNS);
});

test('for any transcript entry, our decoder reads back what our encoder wrote', () => {
  fc.assert(fc.property(entry, (e) => {
    const line = encodeTranscriptLine(e).slice(0, -1);
    assert.deepEqual(decodeTranscriptLine(line), expected(e, entryGoFields, false));
  }), RUNS);
});

test('for any string, a Go-encoded string parses back to it (lone surrogates as U+FFFD) and is what JSON.stringify parses to', () => {
  const withLoneSurrogates = fc.string({ unit: fc.oneof(char, fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff')), maxLength: 30 });
  fc.assert(fc.property(withLoneSurrogates, (s) => {
    const encoded = encodeGoString(s);
    assert.equal(JSON.parse(encoded), wellFormed(s));
    assert.equal(JSON.parse(encoded), JSON.parse(JSON.stringify(wellFormed(s))));
  }), RUNS);
});

const knownKeys = new Set(sessionGoFields.map((f) => f.key.toLowerCase()));
/** Unknown keys: never one that folds onto a known field (Go would match it), nor __proto__. */
const unknownKey = fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 12 })
  .filter((k) => !knownKeys.has(k.toLowerCase()) && k !== '__proto__');
/** Integers beyond 2^53-1 in unknown fields are refused at load (they would be altered), so not generated. */
const hasUnsafeInteger = (v: unknown): boolean =>
  typeof v === 'number' ? Number.isInteger(v) && !Number.isSafeInteger(v)
  : Array.isArray(v) ? v.some(hasUnsafeInteger)
  : v !== null && typeof v === 'object' ? Object.values(v).some(hasUnsafeInteger) : false;
const jsonValue = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown)
  .filter((v) => !JSON.stringify(v).includes('"__proto__"') && !hasUnsafeInteger(v));

const session = fc.tuple(
  fc.record(
    {
      id: str, incarnation: str, name: str, channelID: str, type: str, cmd: str, backend: str, vendor: str,
      modelId: str, worktree: str, dir: str, project: str, agent: str, resumeToken: str, archived: fc.boolean(),
      owned: fc.boolean(), extractor: str, journal: str, consolidateEvery: fc.integer({ min: -1e6, max: 1e6 }),
      gateways: fc.array(str, { maxLength: 3 }), participants: fc.array(str, { maxLength: 3 }), parent: str,
      cost_cap: cost, token_cap: count, cohort_cost_cap: cost, cohort_token_cap: count, paused_reason: str,
    },
    { requiredKeys: ['name', 'channelID', 'type', 'cmd'] },
  ),
  fc.dictionary(unknownKey, jsonValue, { maxKeys: 3 }),
).map(([known, unknown]) => ({ ...unknown, ...known }) as Record<string, unknown>);

/** Strings inside a session are written well-formed; compare against that. */
function wellFormedDeep(v: unknown): unknown {
  if (typeof v === 'string') return wellFormed(v);
  if (Array.isArray(v)) return v.map(wellFormedDeep);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [wellFormed(k), wellFormedDeep(x)]));
  return v;
}

test('for any session row, JSON.parse of state.json gives the row back: Go order, omitempty zeros dropped, unknown keys kept', () => {
  fc.assert(fc.property(session, (row) => {
    const text = encodeStateDocument({ home: { id: '', type: '' }, sessions: [row] });
    assert.ok(!/[<>&\u2028\u2029]/.test(text));
    assert.ok(!text.endsWith('\n'), 'no trailing newline');
    const parsed = JSON.parse(text) as { sessions: Record<string, unknown>[] };
    const want = wellFormedDeep(expected(row, sessionGoFields, true)) as Record<string, unknown>;
    assert.deepEqual(parsed.sessions[0], want);
    assert.deepEqual(Object.keys(parsed.sessions[0] as object), Object.keys(want));
    assert.deepEqual(JSON.parse(encodeSession(row)), want, 'compact and indented agree');
  }), RUNS);
});

test('for any session row, decoding what the encoder wrote gives the row back (decode(encode(x)) = x)', () => {
  fc.assert(fc.property(session, (row) => {
    const doc = fromDecoded(decodeStateText(encodeStateDocument({ home: { id: 'h', type: 't' }, sessions: [row] }), 'state.json'));
    const want = wellFormedDeep(expected(row, sessionGoFields, true));
    assert.deepEqual(doc.sessions?.[0], want);
    assert.equal(encodeStateDocument(doc), encodeStateDocument({ home: { id: 'h', type: 't' }, sessions: [want] }), 'a rewrite is byte-stable');
  }), RUNS);
});
