// The decoder follows Go's json.Unmarshal rules (docs/go-compatibility.md, "Loading"): what Go
// accepts loads, what Go refuses is refused (state.json) or skipped (a transcript line).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DecodeError, decodeStateText, decodeTranscriptLine } from '../../src/store/go-decode.js';

const refused = (rule: string) => (err: unknown): boolean => {
  assert.ok(err instanceof DecodeError, String(err));
  assert.ok(err.message.startsWith('state.json'), err.message);
  assert.ok(err.message.includes(rule), `${err.message} lacks ${rule}`);
  return true;
};

test('transcript keys match case-insensitively, as Go: {"TS":..} fills ts', () => {
  assert.deepEqual(decodeTranscriptLine('{"TS":"x","Role":"user","TEXT":"t","Tokens_In":3}'), { ts: 'x', role: 'user', text: 't', tokens_in: 3 });
});

test('with duplicate keys, exact or case-folded, the last one wins', () => {
  assert.equal(decodeTranscriptLine('{"ts":"a","ts":"b"}')?.ts, 'b');
  assert.equal(decodeTranscriptLine('{"TS":"a","ts":"b"}')?.ts, 'b');
  assert.equal(decodeTranscriptLine('{"ts":"b","TS":"a"}')?.ts, 'a');
});

test('a null transcript line is an all-zero entry and a null field leaves the zero value', () => {
  assert.deepEqual(decodeTranscriptLine('null'), { ts: '', role: '', text: '' });
  assert.deepEqual(decodeTranscriptLine('{"ts":null,"role":"r","cost":null}'), { ts: '', role: 'r', text: '' });
});

test('unknown keys of a transcript line are ignored, as Go', () => {
  assert.deepEqual(decodeTranscriptLine('{"ts":"a","role":"r","text":"t","mood":"ok"}'), { ts: 'a', role: 'r', text: 't' });
});

test('a transcript line Go refuses is skipped: type mismatch, 1.0 for an int, exponent, array, string, trailing garbage, BOM', () => {
  for (const line of ['{"ts":5}', '{"tokens_in":1.0}', '{"dur_ms":1e3}', '[1]', '"s"', '5', '{"ts":"a"} x', '\ufeff{"ts":"a"}', '{"ts":"a"', '{"role":true}']) {
    assert.equal(decodeTranscriptLine(line), undefined, line);
  }
});

test('state.json keys match case-insensitively: "Sessions", "HOME":{"ID":..}, "NAME"', () => {
  const doc = decodeStateText('{"HOME":{"ID":"h","Type":"t"},"Sessions":[{"NAME":"a","ChannelId":"c"}]}', 'state.json');
  assert.deepEqual(doc, { home: { id: 'h', type: 't' }, sessions: [{ name: 'a', channelID: 'c' }] });
});

test('state.json top-level null and {} decode as empty; zero omitempty values are dropped', () => {
  assert.deepEqual(decodeStateText('null', 'state.json'), {});
  assert.deepEqual(decodeStateText('{}', 'state.json'), {});
  assert.deepEqual(decodeStateText('{"workspace":"","sessions":[{"name":"a","archived":false,"token_cap":0}]}', 'state.json'), { sessions: [{ name: 'a' }] });
});

test('unknown keys of state.json and of its rows are kept with their values', () => {
  const doc = decodeStateText('{"future":{"x":[1]},"sessions":[{"name":"a","color":"blue"}]}', 'state.json');
  assert.deepEqual(doc, { future: { x: [1] }, sessions: [{ name: 'a', color: 'blue' }] });
});

test('state.json that Go refuses is refused with the file, the field and the rule', () => {
  assert.throws(() => decodeStateText('', 'state.json'), refused('unexpected end of JSON input'));
  assert.throws(() => decodeStateText('[]', 'state.json'), refused('must be an object, got array'));
  assert.throws(() => decodeStateText('"s"', 'state.json'), refused('must be an object, got string'));
  assert.throws(() => decodeStateText('5', 'state.json'), refused('must be an object, got number'));
  assert.throws(() => decodeStateText('{} x', 'state.json'), refused('invalid JSON'));
  assert.throws(() => decodeStateText('\ufeff{}', 'state.json'), refused('byte-order mark'));
  assert.throws(() => decodeStateText('{"sessions":[{"name":5}]}', 'state.json'), refused('state.json.sessions[0].name: must be a string, got number'));
  assert.throws(() => decodeStateText('{"sessions":[{"name":"a","token_cap":1.5}]}', 'state.json'), refused('"token_cap" must be an integer literal'));
  assert.throws(() => decodeStateText('{"sessions":[{"name":"a","consolidateEvery":1.0}]}', 'state.json'), refused('"consolidateEvery" must be an integer literal'));
  assert.throws(() => decodeStateText('{"sessions":[{"name":"a","token_cap":-1}]}', 'state.json'), refused("state.json.sessions[0].token_cap: -1 is out of range for Go's uint64"));
  assert.throws(() => decodeStateText('{"sessions":{}}', 'state.json'), refused('state.json.sessions: must be an array, got object'));
  assert.throws(() => decodeStateText('{"home":"x"}', 'state.json'), refused('state.json.home: must be an object, got string'));
});

test('every uint64 cap and int loads exactly (a bigint past 2^53-1); one past its Go type is refused', () => {
  const doc = decodeStateText(
    '{"sessions":[{"name":"a","token_cap":18446744073709551615,"cohort_token_cap":9007199254740993,"consolidateEvery":-9223372036854775808},'
      + '{"name":"b","token_cap":9007199254740991,"consolidateEvery":9223372036854775807}]}',
    'state.json',
  );
  assert.deepEqual(doc.sessions, [
    { name: 'a', token_cap: 18446744073709551615n, cohort_token_cap: 9007199254740993n, consolidateEvery: -9223372036854775808n },
    { name: 'b', token_cap: 9007199254740991, consolidateEvery: 9223372036854775807n },
  ]);
  assert.throws(
    () => decodeStateText('{"sessions":[{"name":"a","token_cap":18446744073709551616}]}', 'state.json'),
    refused("state.json.sessions[0].token_cap: 18446744073709551616 is out of range for Go's uint64 (0 to 2^64-1)"),
  );
  assert.throws(() => decodeStateText('{"sessions":[{"name":"a","consolidateEvery":9223372036854775808}]}', 'state.json'), refused("out of range for Go's int"));
});

test('a transcript line with any Go int reads exactly; one past int64 is skipped, as Go skips it', () => {
  assert.deepEqual(
    decodeTranscriptLine('{"ts":"t","role":"r","text":"x","tokens_in":9223372036854775807,"tokens_out":-9223372036854775808,"dur_ms":-1}'),
    { ts: 't', role: 'r', text: 'x', tokens_in: 9223372036854775807n, tokens_out: -9223372036854775808n, dur_ms: -1 },
  );
  assert.equal(decodeTranscriptLine('{"ts":"t","tokens_in":9223372036854775808}'), undefined);
});

test('keys match as Go folds them: ſ is an s and the Kelvin sign a k, dotted I is no i', () => {
  assert.deepEqual(decodeTranscriptLine('{"ts":"t","role":"r","text":"x","to\u212aens_in":3}'), { ts: 't', role: 'r', text: 'x', tokens_in: 3 });
  const doc = decodeStateText('{"sessions":[{"name":"a","reſumeToken":"evil","\u0130d":"kept"}]}', 'state.json');
  assert.deepEqual(doc.sessions, [{ name: 'a', resumeToken: 'evil', '\u0130d': 'kept' }]);
  // Go refuses 1.0 for an int field whatever the key's case.
  assert.equal(decodeTranscriptLine('{"ts":"t","to\u212aens_in":1.0}'), undefined);
});
