// `npm run references`: the reference files the tests read are committed copies (a clean clone
// has nothing else); this compares each with its source, Herrscher's conformance folder, when that
// is at hand (default: ../shared/conformance beside the repository; or the folder given). It
// fails naming each copy that differs, and `--update` copies the sources over. Without the folder
// it says so and succeeds: the tests still run, against the committed copies.
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Each committed copy (from the repository root) by the name of its source in the conformance folder. */
export const REFERENCES: Record<string, string> = {
  'go-goldens.json': 'test/fixtures/go-goldens.json',
  'go-state-package-doc.txt': 'clients/go/state/testdata/go-state-package-doc.txt',
};

/** The committed copies that differ from their sources in `source`, as `copy (source)` lines. */
export function staleReferences(source: string, root = repo): string[] {
  return Object.entries(REFERENCES)
    .filter(([name, copy]) => !readFileSync(path.join(source, name)).equals(readFileSync(path.join(root, copy))))
    .map(([name, copy]) => `${copy} (${path.join(source, name)})`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const update = args.includes('--update');
  const source = path.resolve(args.find((a) => a !== '--update') ?? path.join(repo, '../shared/conformance'));
  if (!existsSync(source)) {
    console.log(`no conformance folder at ${source}: nothing to compare (the tests use the committed copies)`);
  } else {
    const stale = staleReferences(source);
    if (stale.length && update) {
      for (const [name, copy] of Object.entries(REFERENCES)) copyFileSync(path.join(source, name), path.join(repo, copy));
      console.log(`copied over:\n  ${stale.join('\n  ')}`);
    } else if (stale.length) {
      console.error(`committed reference copies differ from their source (npm run references -- --update):\n  ${stale.join('\n  ')}`);
      process.exitCode = 1;
    } else {
      console.log(`${Object.keys(REFERENCES).length} reference copies match ${source}`);
    }
  }
}
