// clientTypesSource's answer kept in a folder, keyed by everything the answer depends on: the
// contract's files (each name and its bytes), the generator's own source, tsconfig.json and
// package-lock.json (which pins TypeScript and zod, whose types the compiler reads). The
// compiler's reading of zod's types costs ~10 s of CPU, and two tests need it (the committed
// file against the contract, and a copy of the contract with one method added): with the same
// inputs they get the same text without compiling again; any changed input is a new key, so a
// stale answer cannot be found. `npm run schema` itself never reads the cache.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { clientTypesSource } from './client-types-gen.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The files outside the contract that the generated text depends on, relative to the repository. */
const INPUTS = ['scripts/client-types-gen.ts', 'tsconfig.json', 'package-lock.json'];

/** A hash of every input of clientTypesSource(protocolDir). */
export function clientTypesKey(protocolDir: string): string {
  const hash = createHash('sha256');
  const add = (name: string, bytes: Buffer): void => {
    hash.update(`${name}\0${bytes.length}\0`);
    hash.update(bytes);
  };
  for (const rel of INPUTS) add(rel, readFileSync(path.join(REPO, rel)));
  for (const entry of readdirSync(protocolDir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (!entry.isFile()) throw new Error(`client-types-cache: ${entry.name} in ${protocolDir} is not a file; the key covers flat folders only`);
    add(`protocol/${entry.name}`, readFileSync(path.join(protocolDir, entry.name)));
  }
  return hash.digest('hex');
}

/** clientTypesSource(protocolDir), from `cacheDir` when an earlier call had the same inputs. */
export function cachedClientTypesSource(protocolDir: string, cacheDir: string): string {
  const file = path.join(cacheDir, `${clientTypesKey(protocolDir)}.ts.txt`);
  try {
    return readFileSync(file, 'utf8');
  } catch {
    // not generated with these inputs yet
  }
  const text = clientTypesSource(protocolDir);
  mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, file);
  return text;
}
