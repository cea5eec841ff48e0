// The folder listings verify walks: every file of a backup, the transcripts and journals the store
// could have written, and whether a folder looks like a state dir at all.
import fs from 'node:fs/promises';
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import { isPathComponent } from './paths.js';

/** Every entry below `dir/rel` that is not a folder, relative to dir. */
export async function walk(dir: string, rel: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel === '' ? e.name : `${rel}/${e.name}`;
    if (e.isDirectory()) out.push(...(await walk(dir, r)));
    else out.push(r);
  }
  return out;
}

/** Whether any of `rels` exists in `dir` (a state dir with no state.json yet still has one of its folders). */
export async function anyExists(dir: string, rels: string[]): Promise<boolean> {
  for (const rel of rels) {
    try {
      await fs.lstat(path.join(dir, rel));
      return true;
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) return true;
    }
  }
  return false;
}

/** `<folder>/<name><ext>` of each file whose name the store could have written, sorted. */
export async function listed(dir: string, folder: string, ext: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(path.join(dir, folder));
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return [];
    throw err;
  }
  return names.filter((n) => n.endsWith(ext) && isPathComponent(n.slice(0, -ext.length))).sort().map((n) => `${folder}/${n}`);
}
