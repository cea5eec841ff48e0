// schema/ byte for byte: `npm run schema` writes schema/openrpc.json and one schema/types/<Name>.json
// per named type, each as 2-space JSON with a final newline. The contract test compares the
// document as a value; this one compares the files as written, so the order of the components and
// the type files themselves are checked too, in every clone (CI's regeneration check aside).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openRpcDocument, typeSchemas } from '../../src/protocol/openrpc.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const asWritten = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

test('schema/openrpc.json is the generated document as written, its components in name order', () => {
  const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  const doc = openRpcDocument(version) as { components: { schemas: Record<string, unknown> } };
  const names = Object.keys(doc.components.schemas);
  assert.deepEqual(names, [...names].sort());
  assert.equal(readFileSync(path.join(root, 'schema/openrpc.json'), 'utf8'), asWritten(doc));
});

test('schema/types holds exactly one file per named type, each the generated schema as written', () => {
  const types = typeSchemas();
  const dir = path.join(root, 'schema/types');
  assert.deepEqual(readdirSync(dir).sort(), Object.keys(types).map((n) => `${n}.json`).sort());
  for (const [name, schema] of Object.entries(types)) {
    assert.equal(readFileSync(path.join(dir, `${name}.json`), 'utf8'), asWritten(schema), name);
    const s = schema as { $id: string; title: string; $schema: string };
    assert.equal(s.$id, `${name}.json`);
    assert.equal(s.title, name);
    assert.equal(s.$schema, 'https://json-schema.org/draft/2020-12/schema');
  }
  const refs = JSON.stringify(types).match(/"\$ref":"[^"]*"/g) ?? [];
  assert.ok(refs.length > 0);
  for (const r of refs) assert.match(r, /^"\$ref":"[A-Za-z]+\.json"$/, 'a type refers to another by its file');
});
