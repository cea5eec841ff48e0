// The package version, read from package.json wherever the CLI runs from.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export function version(): string {
  // src/cli.ts (tsx) and dist/src/cli.js (built) sit at different depths below package.json.
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg)) return (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version;
  }
  return '0.0.0';
}
