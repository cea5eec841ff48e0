// The state dir as a place no other user can reach into. At open: the dir must belong to this
// user (or root) and be writable by nobody else, or another user could plant a link there and
// have this server write through it. Inside it: every folder the store enters or creates
// (transcripts/, participants/, .herrscher-state/…) must be a real folder, never a link; the
// files themselves are opened with O_NOFOLLOW (io.ts).
import type { Stats } from 'node:fs';
import path from 'node:path';
import type { Io } from './io.js';
import { linkRefused } from './io.js';
import { StoreError } from './store-error.js';
import { errnoOf } from '../common/errno.js';

/**
 * Refuses a state dir writable by group or others, or owned by another user (root excepted):
 * the message names the dir and the command that fixes it. Resolves with the dir's lstat.
 */
export async function assertPrivateDir(io: Io, dir: string): Promise<Stats> {
  const st = await io.lstat(dir);
  const mode = st.mode & 0o7777;
  const uid = process.geteuid?.();
  if (uid !== undefined && st.uid !== uid && st.uid !== 0) {
    throw new StoreError('io', `the state dir ${dir} belongs to uid ${st.uid}, not to this user (uid ${uid}): `
      + `its owner could plant a link there and make this server overwrite the link's target; `
      + `serve a dir of your own, or fix it with: chown ${uid} '${dir}'`, { code: 'EPERM' }, 'EPERM');
  }
  if ((mode & 0o022) !== 0) {
    throw new StoreError('io', `the state dir ${dir} is writable by ${mode & 0o020 ? 'its group' : ''}`
      + `${(mode & 0o022) === 0o022 ? ' and ' : ''}${mode & 0o002 ? 'others' : ''} (mode ${mode.toString(8).padStart(4, '0')}): `
      + `another user could plant a link there and make this server overwrite the link's target; `
      + `fix it with: chmod go-w '${dir}'`, { code: 'EPERM' }, 'EPERM');
  }
  return st;
}

/**
 * `io` confined to `root` (the state dir, resolved): before a call reaches a file under root,
 * every folder between root and it must be a real folder (lstat), never a link; mkdir creates
 * them one by one under the same check, never root itself (a removed state dir stays removed). A folder found real once stays trusted for the life of
 * the store: only this user can change the dir (assertPrivateDir), and rechecking on every
 * open would cost a syscall per read. A path outside root is refused (EPERM), never touched.
 */
export function confine(io: Io, root: string): Io {
  const trusted = new Set<string>([root]);

  /** The folders of `target` below root, outermost first; `self` includes target itself. */
  const foldersOf = (target: string, self: boolean): string[] => {
    const rel = path.relative(root, target);
    if (rel === '') return [];
    if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) {
      // Every path the store derives stays inside (paths.ts); this one did not: refuse, never touch.
      throw Object.assign(new Error('EPERM: the path leads outside the state dir'), { code: 'EPERM' });
    }
    const parts = rel.split(path.sep);
    if (!self) parts.pop();
    return parts.map((_, i) => path.join(root, ...parts.slice(0, i + 1)));
  };

  /** Checks the folders; a missing one ends the walk (the call itself then fails with ENOENT). */
  const check = async (target: string, self = false): Promise<void> => {
    for (const dir of foldersOf(target, self)) {
      if (trusted.has(dir)) continue;
      let st;
      try {
        st = await io.lstat(dir);
      } catch (err) {
        if (errnoOf(err) === 'ENOENT') return;
        throw err;
      }
      if (!st.isDirectory()) throw linkRefused(); // a link, or a file where a folder belongs
      trusted.add(dir);
    }
  };

  return {
    ...io,
    async writeAtomic(file, data, opts) {
      await check(file);
      return io.writeAtomic(file, data, opts);
    },
    async appendThenReplace(line, file, data, opts) {
      await check(file);
      return io.appendThenReplace(line, file, data, opts);
    },
    async syncDir(dir) {
      await check(dir);
      return io.syncDir(dir);
    },
    async open(file, flags, mode) {
      await check(file);
      return io.open(file, flags, mode);
    },
    async readFile(file) {
      await check(file);
      return io.readFile(file);
    },
    async rename(from, to) {
      await check(from);
      await check(to);
      return io.rename(from, to);
    },
    async mkdir(dir, mode) {
      const folders = foldersOf(dir, true);
      // The state dir itself is made only by the open (Go's Save makes it too): once removed, it is never made again.
      if (folders.length === 0) return void (await io.lstat(dir));
      for (const f of folders) {
        if (trusted.has(f)) continue;
        try {
          await io.mkdir(f, mode);
        } catch (err) {
          await check(f, true); // a link in the way is the cause to report
          throw err;
        }
        await check(f, true);
      }
    },
    async unlink(file) {
      await check(file);
      return io.unlink(file);
    },
    async readdir(dir) {
      await check(dir, true);
      return io.readdir(dir);
    },
  };
}
