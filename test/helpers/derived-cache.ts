// Where tests keep what is slow to derive and depends only on content they can hash, shared by
// every run and checkout of this user on this machine: the typed client's generated types
// (scripts/client-types-cache.ts), and folders kept by their content (`keptByContent`).
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const CLIENT_TYPES_CACHE = path.join(os.tmpdir(), `herrscher-state-client-types-${process.getuid?.() ?? 'u'}`);

/** Where `keptByContent` keeps its folders of one kind. */
const keptRoot = (kind: string): string => path.join(os.tmpdir(), `herrscher-state-kept-${kind}-${process.getuid?.() ?? 'u'}`);

/** A hash of a folder's content: each entry's path, mode and bytes (a symlink's target, not followed). */
function folderHash(dir: string): string {
  const h = createHash('sha256');
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(dir, rel)).sort()) {
      const r = path.join(rel, name);
      const abs = path.join(dir, r);
      const st = lstatSync(abs);
      if (st.isDirectory()) walk(r);
      else h.update(`${r}\0${st.mode}\0`).update(st.isSymbolicLink() ? readlinkSync(abs) : readFileSync(abs)).update('\0');
    }
  };
  walk('.');
  return h.digest('hex').slice(0, 16);
}

/**
 * A folder `fill` makes, kept between runs under a name that is the hash of what it holds, and
 * returned instead of a fresh one each run: for tools whose caches key a file by its path as well
 * as its bytes (Go's build cache, tsx's transform cache), so a run finds what the last one with
 * the same content made. `fill` writes into a fresh temporary folder, which is renamed into place
 * (or removed when another run put the same content there first), so a run never sees half a
 * folder; a kept folder must never be written to (two runs at once share it). Each use touches
 * it; folders of the kind unused for an hour are removed.
 */
export function keptByContent(kind: string, fill: (dir: string) => void): string {
  const root = keptRoot(kind);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const tmp = mkdtempSync(path.join(root, 'tmp-'));
  let final: string;
  try {
    fill(tmp);
    final = path.join(root, folderHash(tmp));
    if (existsSync(final)) rmSync(tmp, { recursive: true, force: true });
    else {
      try {
        renameSync(tmp, final);
      } catch (err) {
        if (!existsSync(final)) throw err;
        rmSync(tmp, { recursive: true, force: true }); // another run put the same content there first
      }
    }
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  const now = new Date();
  utimesSync(final, now, now);
  for (const name of readdirSync(root)) {
    const other = path.join(root, name);
    const unused = (): boolean => {
      try {
        return Date.now() - statSync(other).mtimeMs > 3_600_000;
      } catch {
        return false; // removed meanwhile by another run
      }
    };
    if (other !== final && unused()) rmSync(other, { recursive: true, force: true });
  }
  return final;
}
