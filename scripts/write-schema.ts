// `npm run schema`: writes schema/ from the contract (src/protocol). CI regenerates it and fails
// when the committed copy differs, so schema/ can never drift from the code.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, ErrorDescriptions } from '../src/protocol/errors.js';
import { openRpcDocument, typeSchemas } from '../src/protocol/openrpc.js';
import { methodList } from '../src/protocol/table.js';
import { writeGo } from './go-client-gen.js';
import { applyPythonSections, pythonSections } from './python-client-gen.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'schema');
const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };

const write = (rel: string, value: unknown): void => {
  writeFileSync(path.join(out, rel), `${JSON.stringify(value, null, 2)}\n`);
};

mkdirSync(path.join(out, 'types'), { recursive: true });
for (const stale of readdirSync(path.join(out, 'types'))) rmSync(path.join(out, 'types', stale));
write('openrpc.json', openRpcDocument(version));
for (const [name, schema] of Object.entries(typeSchemas())) write(`types/${name}.json`, schema);
console.log(`schema/: openrpc.json and ${Object.keys(typeSchemas()).length} types written`);

// The Go client's generated half, from the same document.
const goFiles = writeGo(path.join(root, 'clients/go'), { doc: openRpcDocument(version), errorCodes: ErrorCodes, errorDescriptions: ErrorDescriptions });
console.log(`clients/go/: ${goFiles.join(', ')} written`);

// The Python client's generated sections, in place.
const pyPath = path.join(root, 'clients/python/herrscher_state.py');
const py = readFileSync(pyPath, 'utf8');
const pyUpdated = applyPythonSections(py, pythonSections(openRpcDocument(version), ErrorCodes, ErrorDescriptions));
if (pyUpdated !== py) writeFileSync(pyPath, pyUpdated);

// The README's method table, between its markers: one row per method with its example.
const cell = (v: unknown): string => `\`${JSON.stringify(v)}\``.replace(/\|/g, '\\|');
const rows = methodList.map((d) => {
  const call = d.notification ? `${cell(d.example.params)} (notification)` : `${cell(d.example.params)} → ${cell(d.example.result ?? null)}`;
  return `| \`${d.method}\` | ${d.summary.replace(/\|/g, '\\|')} | ${call} |`;
});
const table = ['| method | what it does | example: params → result |', '|---|---|---|', ...rows].join('\n');
const readmePath = path.join(root, 'README.md');
const readme = readFileSync(readmePath, 'utf8');
const begin = '<!-- methods:begin -->';
const end = '<!-- methods:end -->';
const updated = readme.replace(new RegExp(`${begin}[\\s\\S]*${end}`), `${begin}\n${table}\n${end}`);
if (updated !== readme) writeFileSync(readmePath, updated);
