// The package version, read from package.json wherever the CLI runs from.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function version(): string {
  // src/cli.ts (tsx) and dist/src/cli.js (built) sit at different depths below package.json. The
  // package.json files of dist/src and its folders only mark module scopes (scripts/bundle-cli.mjs):
  // the first one with a version is the package's.
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    if (!existsSync(pkg)) continue;
    const { version } = JSON.parse(readFileSync(pkg, 'utf8')) as { version?: unknown };
    if (typeof version === 'string') return version;
  }
  return '0.0.0';
}
