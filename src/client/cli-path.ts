// Where spawn() finds the CLI when not told: the package's own `herrscher-state/cli` export,
// looked up from wherever this code runs. Unbundled (ESM or CommonJS) that is this
// module's own file; bundled into an extension by esbuild or webpack it is the bundle's file
// (an ESM module bundled as CommonJS gets an empty `import.meta`, so that alone cannot be relied
// on), then the main script and the working directory, for a bundle that loaded us from elsewhere.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package whose `./cli` export (the bundled dist/src/cli.js) spawn() runs. */
export const PACKAGE_NAME = 'herrscher-state';

/** The files to resolve the package from, best first; `moduleUrl` is this module's URL where known. */
export function resolutionBases(moduleUrl: string | undefined): string[] {
  const bases: string[] = [];
  if (typeof moduleUrl === 'string' && moduleUrl.startsWith('file:')) bases.push(fileURLToPath(moduleUrl));
  // typeof guards: in an ES module these names are not defined at all.
  if (typeof __filename === 'string' && path.isAbsolute(__filename)) bases.push(__filename);
  if (typeof require === 'function' && typeof require.main?.filename === 'string') bases.push(require.main.filename);
  if (process.argv[1]) bases.push(path.resolve(process.argv[1]));
  bases.push(path.join(process.cwd(), 'noop.js'));
  return bases;
}

/** The CLI a package folder's package.json exports as `./cli`, if that folder holds this package. */
function cliIn(dir: string): string | undefined {
  let pkg: { name?: unknown; exports?: Record<string, unknown> };
  try {
    pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as typeof pkg;
  } catch {
    return undefined;
  }
  const cli = pkg.name === PACKAGE_NAME ? pkg.exports?.['./cli'] : undefined;
  return typeof cli === 'string' && existsSync(path.join(dir, cli)) ? path.join(dir, cli) : undefined;
}

/**
 * The CLI's path, or an error that says how to pass it. Node's lookup done by hand (each folder up
 * from a base, itself and its node_modules/herrscher-state): a bundler rewrites require.resolve
 * and createRequire calls into its own module ids (webpack does), but leaves file reads alone.
 */
export function findCli(bases: string[]): string {
  for (const base of bases) {
    for (let dir = path.dirname(base); ; dir = path.dirname(dir)) {
      const found = cliIn(dir) ?? cliIn(path.join(dir, 'node_modules', PACKAGE_NAME));
      if (found) return found;
      if (path.dirname(dir) === dir) break;
    }
  }
  throw new Error(
    `spawn(): cannot find ${PACKAGE_NAME}'s CLI from ${bases.join(', ')}; ` +
      `pass spawn({ cli }) with the path of require.resolve('${PACKAGE_NAME}/cli') (or of a copy shipped beside your bundle)`,
  );
}
