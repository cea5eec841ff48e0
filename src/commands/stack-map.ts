// Stack traces that point into src/: the CLI runs as one minified bundle, whose frames read
// `dist/src/cli-main.js:2:52345`. Node maps stacks only for modules loaded after source maps were
// enabled, which the bundle itself cannot be, and enabling them for every start would parse a
// 2 MB map each time. So a stack is mapped here, through the bundle's map, when one is logged:
// at debug or trace only. Frames of files without a map beside them are left as they are.
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { errnoOf } from '../common/errno.js';

const maps = new Map<string, { map: SourceMap; dir: string } | null>();

function mapFor(file: string): { map: SourceMap; dir: string } | null {
  let found = maps.get(file);
  if (found === undefined) {
    try {
      found = { map: new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]), dir: path.dirname(file) };
    } catch (err) {
      // No map beside the file (tsx, a dependency) or one we cannot read: the frame stays as is.
      if (errnoOf(err) !== 'ENOENT') process.emitWarning(`source map of ${file} unusable: ${(err as Error).message}`);
      found = null;
    }
    maps.set(file, found);
  }
  return found;
}

/** `at name (/x/dist/src/cli-main.js:2:234)` (or a file:// URL) → `at name (/x/src/store/store.ts:12:5)`. */
export function mapStack(stack: string): string {
  return stack.replace(/((?:file:\/\/)?\/[^\s():]+\.js):(\d+):(\d+)/g, (frame, location: string, line: string, column: string) => {
    const file = location.startsWith('file://') ? fileURLToPath(location) : location;
    const m = mapFor(file);
    if (!m) return frame;
    const entry = m.map.findEntry(Number(line) - 1, Number(column) - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number };
    if (!entry.originalSource || entry.originalLine === undefined || entry.originalColumn === undefined) return frame;
    const source = entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : path.resolve(m.dir, entry.originalSource);
    return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
}
