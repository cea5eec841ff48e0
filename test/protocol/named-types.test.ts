// The contract names its shared shapes once: schema/openrpc.json carries each in
// components.schemas and refers to it by $ref, and no method defined in src/protocol is missing
// from the table (the type check catches a module table.ts imports; this test catches any file).
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { openRpcDocument } from '../../src/protocol/openrpc.js';
import { methodList, notificationList } from '../../src/protocol/table.js';

const protocolDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/protocol');

type Json = Record<string, unknown>;
const refsIn = (v: unknown, out: string[] = []): string[] => {
  if (Array.isArray(v)) for (const x of v) refsIn(x, out);
  else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') out.push(x);
      else refsIn(x, out);
    }
  }
  return out;
};

test('every exported method and notification of src/protocol is in the table', async () => {
  const listed = new Set<unknown>([...methodList, ...notificationList]);
  const unlisted: string[] = [];
  for (const file of readdirSync(protocolDir).filter((f) => f.endsWith('.ts'))) {
    const mod = (await import(pathToFileURL(path.join(protocolDir, file)).href)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod)) {
      const looksLikeDef = value !== null && typeof value === 'object' && 'method' in value && 'params' in value && 'summary' in value;
      if (looksLikeDef && !listed.has(value)) unlisted.push(`${file}: ${name}`);
    }
  }
  assert.deepEqual(unlisted, []);
});

test('the shared shapes are components referred to by $ref, each written once', () => {
  const doc = openRpcDocument('0.0.0') as { components: { schemas: Record<string, Json> } } & Json;
  const names = Object.keys(doc.components.schemas);
  for (const n of ['Session', 'HomeRef', 'StateDocument', 'TranscriptEntry', 'TranscriptUsage', 'SessionInfo', 'SessionDidChangeParams', 'TranscriptDidAppendParams', 'ConflictData', 'StorageFailureData']) {
    assert.ok(names.includes(n), `${n} is a component`);
  }
  const text = JSON.stringify(doc.methods) + JSON.stringify(doc['x-notifications']);
  assert.equal(text.includes('"paused_reason":{'), false, 'no method inlines a Session');
  const refs = refsIn(doc);
  for (const r of refs) {
    assert.match(r, /^#\/components\/schemas\//);
    assert.ok(names.includes(r.split('/').pop() ?? ''), `${r} resolves`);
  }
  assert.ok(refs.filter((r) => r.endsWith('/Session')).length >= 5, 'methods share one Session');
});
