// The Go-compatible encoder: the exact bytes Go's encoding/json writes (docs/go-compatibility.md).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeGoString, encodeSession, encodeStateDocument, encodeTranscriptLine, UnsupportedValueError } from '../../src/store/go-json.js';

test('encodeGoString escapes <, > and & as \\u003c, \\u003e and \\u0026, as Go\'s HTML-safe encoder', () => {
  assert.equal(encodeGoString('a<b>c&d'), '"a\\u003cb\\u003ec\\u0026d"');
});

test('encodeGoString escapes U+2028 and U+2029, which JSON.stringify writes raw', () => {
  assert.equal(encodeGoString('x\u2028y\u2029z'), '"x\\u2028y\\u2029z"');
  assert.equal(encodeGoString('x<>&\u2028'), '"x\\u003c\\u003e\\u0026\\u2028"');
});

test('encodeGoString writes \\b \\f \\n \\r \\t short, other controls as lower-case \\u00XX, and DEL raw (Go >= 1.22)', () => {
  assert.equal(encodeGoString('\b\f\n\r\t'), '"\\b\\f\\n\\r\\t"');
  assert.equal(encodeGoString('\u0000\u0001\u001b\u001f'), '"\\u0000\\u0001\\u001b\\u001f"');
  assert.equal(encodeGoString('\u007f'), '"\u007f"');
});

test('encodeGoString escapes quote and backslash and leaves other unicode raw', () => {
  assert.equal(encodeGoString('"\\'), '"\\"\\\\"');
  assert.equal(encodeGoString('é日本😀\u00a0'), '"é日本😀\u00a0"');
});

test('encodeGoString writes a lone surrogate as \\ufffd, as Go does for invalid UTF-8', () => {
  assert.equal(encodeGoString('a\ud800b'), '"a\\ufffdb"');
  assert.equal(encodeGoString('\udc00'), '"\\ufffd"');
  assert.equal(encodeGoString('\ud83d'), '"\\ufffd"');
  assert.equal(encodeGoString('\ud83d\ude00\ud83d'), '"😀\\ufffd"');
});

test('an empty transcript entry encodes as {"ts":"","role":"","text":""} and a newline', () => {
  assert.equal(encodeTranscriptLine({}), '{"ts":"","role":"","text":""}\n');
});

test('transcript lines put keys in Go struct order, omit zero usage fields and drop unknown keys', () => {
  const line = encodeTranscriptLine({
    dur_ms: 7, text: 't', extra: 'dropped', cost: 0, tokens_in: 0, role: 'user', ts: '1', kind: '', cache_read: 2,
  });
  assert.equal(line, '{"ts":"1","role":"user","text":"t","cache_read":2,"dur_ms":7}\n');
});

test('numbers print in the shortest form Go and ES share: 1e-7, 1e+21, 0.000001, 0.30000000000000004', () => {
  const costs = [1e-7, 1e21, 0.000001, 0.1 + 0.2, 0.004, 123456789012];
  const lines = costs.map((cost) => encodeTranscriptLine({ ts: '', role: '', text: '', cost }));
  assert.deepEqual(lines.map((l) => /"cost":([^,}]+)/.exec(l)?.[1]), ['1e-7', '1e+21', '0.000001', '0.30000000000000004', '0.004', '123456789012']);
});

test('a NaN or infinite cost is refused as Go refuses it (json: unsupported value), never written as null', () => {
  for (const cost of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    assert.throws(() => encodeTranscriptLine({ ts: '', role: '', text: '', cost }), (err: unknown) => {
      assert.ok(err instanceof UnsupportedValueError);
      assert.equal(err.path, 'entry.cost');
      assert.match(err.message, new RegExp(`unsupported value ${String(cost)}`));
      return true;
    });
  }
  assert.throws(
    () => encodeStateDocument({ home: { id: '', type: '' }, sessions: [{ name: 'a', cost_cap: Number.NaN }] }),
    (err: unknown) => err instanceof UnsupportedValueError && err.path === 'state.sessions[0].cost_cap',
  );
});

test('the empty state is exactly Go\'s MarshalIndent bytes: home always, sessions null, no trailing newline', () => {
  assert.equal(
    encodeStateDocument({ home: { id: '', type: '' }, sessions: null }),
    '{\n  "home": {\n    "id": "",\n    "type": ""\n  },\n  "sessions": null\n}',
  );
  assert.equal(encodeStateDocument({}), '{\n  "home": {\n    "id": "",\n    "type": ""\n  },\n  "sessions": null\n}');
});

test('a state whose sessions were all removed writes "sessions": []', () => {
  assert.equal(
    encodeStateDocument({ home: { id: 'h', type: 't' }, sessions: [] }),
    '{\n  "home": {\n    "id": "h",\n    "type": "t"\n  },\n  "sessions": []\n}',
  );
});

test('state.json keys follow Go\'s State order with omitempty, whatever the object\'s order', () => {
  const doc = { instanceID: 'i', sessions: null, source: '', workspace: 'w', statusMessageID: 'm', repo: 'r', home: { type: 'x', id: 'y' } };
  assert.equal(
    encodeStateDocument(doc),
    '{\n  "home": {\n    "id": "y",\n    "type": "x"\n  },\n  "repo": "r",\n  "workspace": "w",\n  "sessions": null,\n  "statusMessageID": "m",\n  "instanceID": "i"\n}',
  );
});

test('a session row follows Go\'s Session order: name, channelID, type, cmd always; zero omitempty fields dropped', () => {
  const row = {
    paused_reason: 'cost', cohort_token_cap: 4, cohort_cost_cap: 3.5, token_cap: 2, cost_cap: 1.25, parent: 'p',
    participants: ['u'], gateways: ['chat'], consolidateEvery: 5, journal: 'j', extractor: 'e', owned: true,
    archived: true, resumeToken: 'r', agent: 'a', project: 'pr', dir: 'd', worktree: 'w', modelId: 'm',
    vendor: 'v', backend: 'b', cmd: 'c', type: 'text', channelID: 'ch', name: 'n', incarnation: 'inc', id: 'id',
  };
  assert.equal(
    encodeSession(row),
    '{"id":"id","incarnation":"inc","name":"n","channelID":"ch","type":"text","cmd":"c","backend":"b","vendor":"v",'
      + '"modelId":"m","worktree":"w","dir":"d","project":"pr","agent":"a","resumeToken":"r","archived":true,"owned":true,'
      + '"extractor":"e","journal":"j","consolidateEvery":5,"gateways":["chat"],"participants":["u"],"parent":"p",'
      + '"cost_cap":1.25,"token_cap":2,"cohort_cost_cap":3.5,"cohort_token_cap":4,"paused_reason":"cost"}',
  );
  const zero = {
    name: '', archived: false, owned: false, consolidateEvery: 0, gateways: [], participants: [], cost_cap: 0, token_cap: 0, id: '',
  };
  assert.equal(encodeSession(zero), '{"name":"","channelID":"","type":"","cmd":""}');
});

test('unknown fields of the document and of rows are written after the known ones, in their own order', () => {
  const doc = {
    future: { b: [1, 'x<'], a: null }, home: { id: '', type: '' },
    sessions: [{ zeta: true, name: 'n', alpha: { k: 1 } }], later: 'y',
  };
  assert.equal(
    encodeStateDocument(doc),
    [
      '{',
      '  "home": {', '    "id": "",', '    "type": ""', '  },',
      '  "sessions": [',
      '    {',
      '      "name": "n",', '      "channelID": "",', '      "type": "",', '      "cmd": "",',
      '      "zeta": true,',
      '      "alpha": {', '        "k": 1', '      }',
      '    }',
      '  ],',
      '  "future": {', '    "b": [', '      1,', '      "x\\u003c"', '    ],', '    "a": null', '  },',
      '  "later": "y"',
      '}',
    ].join('\n'),
  );
});

test('strings inside state.json get Go\'s escapes too', () => {
  const out = encodeStateDocument({ home: { id: 'x<>&\u2028', type: '' }, sessions: null });
  assert.ok(out.includes('"id": "x\\u003c\\u003e\\u0026\\u2028"'));
});
