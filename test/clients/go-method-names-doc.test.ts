// docs/clients.md names the Go client's methods: the list between its markers is what
// `npm run schema` writes from the contract, and every name in it is a method of clients/go.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { openRpcDocument } from '../../src/protocol/openrpc.js';
import { applyGoMethodNames, goMethodNames } from '../../scripts/go-method-names-doc.js';
import { REPO } from '../helpers/cli.js';

const doc = (): Record<string, unknown> => openRpcDocument('0.0.0') as Record<string, unknown>;
const clientsDoc = (): string => readFileSync(path.join(REPO, 'docs/clients.md'), 'utf8');

/** Go source of the client package (not its tests), where each listed method must be declared. */
const goSource = (): string => {
  const dir = path.join(REPO, 'clients/go');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.go') && !f.endsWith('_test.go'))
    .map((f) => readFileSync(path.join(dir, f), 'utf8'))
    .join('\n');
};

/** `Name` is a method of *Client, `Type.Name` one of *Type. */
const declared = (source: string, name: string): boolean => {
  const [type, method] = name.includes('.') ? name.split('.') : ['Client', name];
  return new RegExp(`^func \\(\\w+ \\*${type}\\) ${method}\\(`, 'm').test(source);
};

test("docs/clients.md's Go method names are what npm run schema writes", () => {
  const text = clientsDoc();
  assert.equal(applyGoMethodNames(text, doc()), text, 'docs/clients.md is stale: run npm run schema');
});

test('every Go method named in docs/clients.md is declared in clients/go', () => {
  const source = goSource();
  const missing = goMethodNames(doc()).flatMap(({ wire, methods }) => methods.filter((m) => !declared(source, m.name)).map((m) => `${wire}: ${m.name}`));
  assert.deepEqual(missing, []);
  assert.equal(declared(source, 'NoSuchMethod'), false, 'the check finds only declared methods');
});

test('every wire method has at least one Go method a caller can reach', () => {
  const none = goMethodNames(doc()).filter(({ methods }) => methods.length === 0).map(({ wire }) => wire);
  assert.deepEqual(none, []);
});

test('a section edited by hand is put back, and missing markers are an error', () => {
  const text = clientsDoc();
  const edited = text.replace('| `session/add` | `AddSession` |', '| `session/add` | `NewSession` |');
  assert.notEqual(edited, text, 'the row to edit is in the page');
  assert.equal(applyGoMethodNames(edited, doc()), text);
  assert.throws(() => applyGoMethodNames('# no markers\n', doc()), /markers/);
});
