// `npm run schema`: writes every file derived from the contract (src/protocol; the list is
// scripts/derived-files.ts). CI regenerates them and fails when a committed copy differs, so none
// can drift from the code.
//
// Run as `tsx scripts/write-schema.ts <protocol dir> <root>` it derives from another copy of the
// contract into another tree (which must hold the files derived-files.ts fills in, and
// package.json): the test that adds a method to a copy of the contract uses that.
// HERRSCHER_CLIENT_TYPES_CACHE, when set, is a folder where the typed client's types are kept by
// their inputs (scripts/client-types-cache.ts); `npm run schema` does not set it.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cachedClientTypesSource } from './client-types-cache.js';
import { CLIENT_TYPES_FILE, clientTypesSource } from './client-types-gen.js';
import { type Contract, derivedFiles, TYPES_DIR } from './derived-files.js';
import { withPythonVersion } from './python-version.js';

type Json = Record<string, unknown>;

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const [protocolDir = path.join(repo, 'src/protocol'), root = repo] = process.argv.slice(2);

const load = async <T>(file: string): Promise<T> => (await import(pathToFileURL(path.resolve(protocolDir, file)).href)) as T;
const { openRpcDocument, typeSchemas } = await load<{ openRpcDocument(v: string): Json; typeSchemas(): Record<string, Json> }>('openrpc.ts');
const { ErrorCodes, ErrorDescriptions } = await load<{ ErrorCodes: Record<string, number>; ErrorDescriptions: Record<string, string> }>('errors.ts');
const { methodList } = await load<{ methodList: Contract['methods'] }>('table.ts');
const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };

const contract: Contract = { doc: openRpcDocument(version), types: typeSchemas(), errorCodes: ErrorCodes, errorDescriptions: ErrorDescriptions, methods: methodList };
const files = derivedFiles(contract, (rel) => readFileSync(path.join(root, rel), 'utf8'));
// The typed client's plain types: the TypeScript compiler's reading of the contract's own source
// (kept in the folder HERRSCHER_CLIENT_TYPES_CACHE names, when a test names one).
const cacheDir = process.env.HERRSCHER_CLIENT_TYPES_CACHE;
files[CLIENT_TYPES_FILE] = cacheDir ? cachedClientTypesSource(protocolDir, cacheDir) : clientTypesSource(protocolDir);
// The Python package's version is the npm package's.
const py = 'clients/python/herrscher_state.py';
files[py] = withPythonVersion(files[py] ?? readFileSync(path.join(root, py), 'utf8'), version);

const typesDir = path.join(root, TYPES_DIR);
mkdirSync(typesDir, { recursive: true });
for (const stale of readdirSync(typesDir)) if (!(`${TYPES_DIR}/${stale}` in files)) rmSync(path.join(typesDir, stale));
let written = 0;
for (const [rel, text] of Object.entries(files)) {
  const file = path.join(root, rel);
  let current: string | undefined;
  try {
    current = readFileSync(file, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === text) continue;
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  written++;
}
console.log(`${Object.keys(files).length} derived files checked, ${written} written`);
