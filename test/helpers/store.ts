// What the store tests share: opening a store in a temp dir, counting or failing the fs seam,
// matching a StoreError by kind, code and message, and telling whether a file was rewritten.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import type { NewSession } from '../../src/protocol/model.js';
import type { Io } from '../../src/store/io.js';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { StoreOptions } from '../../src/store/store.js';
import { Store } from '../../src/store/store.js';
import { StoreError } from '../../src/store/store-error.js';
import type { StoreErrorKind } from '../../src/store/store-error.js';
import { statePathIn } from './temp-dir.js';

/** A NewSession with Go's non-omitempty fields defaulted, as session/add's schema does. */
export function newSession(name: string, extra: Partial<NewSession> = {}): NewSession {
  return { name, channelID: '', type: '', cmd: '', ...extra };
}

/** Opens the store of `dir/state.json`. */
export function openIn(dir: string, options: StoreOptions = {}): Promise<Store> {
  return Store.open(statePathIn(dir), options);
}

/** Closes and opens again: Go's "reload". */
export async function reopen(store: Store, options: StoreOptions = {}): Promise<Store> {
  await store.close();
  return Store.open(store.statePath, options);
}

type IoName = keyof Io;

/** An Io that counts every call by name, with some calls optionally replaced. */
export function countingIo(overrides: Partial<Io> = {}): { io: Io; calls: Record<IoName, number> } {
  const base = withIo(overrides);
  const calls = Object.fromEntries(Object.keys(nodeIo).map((k) => [k, 0])) as Record<IoName, number>;
  const io = {} as Record<IoName, unknown>;
  for (const name of Object.keys(base) as IoName[]) {
    const fn = base[name] as (...args: unknown[]) => unknown;
    io[name] = (...args: unknown[]) => {
      calls[name] += 1;
      return fn(...args);
    };
  }
  return { io: io as unknown as Io, calls };
}

/** An errno error shaped as node:fs throws it (the message repeats an absolute path after a comma). */
export function errno(code: string, syscall = 'write'): NodeJS.ErrnoException {
  const reasons: Record<string, string> = {
    ENOSPC: 'no space left on device',
    EACCES: 'permission denied',
    EIO: 'i/o error',
    EROFS: 'read-only file system',
  };
  const err = new Error(`${code}: ${reasons[code] ?? 'injected'}, ${syscall} '/abs/secret/path'`) as NodeJS.ErrnoException;
  err.code = code;
  err.syscall = syscall;
  return err;
}

/**
 * The real fs seam, except that closing a file handle (of a file `which` accepts) fails with EIO
 * after it really closed; `overrides` replace further calls.
 */
export function closeFailsIo(overrides: Partial<Io> = {}, which: (file: string) => boolean = () => true): Io {
  return withIo({
    open: async (f, fl, mode) => {
      const fh = await nodeIo.open(f, fl, mode);
      if (which(f)) {
        const close = fh.close.bind(fh);
        fh.close = async () => {
          await close();
          throw errno('EIO', 'close');
        };
      }
      return fh;
    },
    ...overrides,
  });
}

/**
 * A validator for assert.rejects/throws: a StoreError of `kind`, with `code` when given, whose
 * message contains every part given.
 */
export function storeError(kind: StoreErrorKind, parts: string[] = [], code?: string): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof StoreError, `expected a StoreError, got ${String(err)}`);
    assert.equal(err.kind, kind, `kind of: ${err.message}`);
    if (code !== undefined) assert.equal(err.code, code, `code of: ${err.message}`);
    for (const part of parts) assert.ok(err.message.includes(part), `message ${JSON.stringify(err.message)} lacks ${JSON.stringify(part)}`);
    return true;
  };
}

/** A file's bytes and inode, or null when missing: equal snapshots mean it was not rewritten. */
export function snapshot(file: string): { bytes: string; ino: number; mtimeNs: bigint } | null {
  if (!existsSync(file)) return null;
  const st = statSync(file, { bigint: true });
  return { bytes: readFileSync(file).toString('base64'), ino: Number(st.ino), mtimeNs: st.mtimeNs };
}

/** The text of a file. */
export const text = (file: string): string => readFileSync(file, 'utf8');

/** Every store method that derives a file path from a name: each must refuse a name that is not one safe file name. */
export const pathMethods: [string, (s: Store, name: string) => Promise<unknown>][] = [
  ['appendTranscript', (s, n) => s.appendTranscript(n, { ts: 't', role: 'user', text: 'x' })],
  ['readTranscript', (s, n) => s.readTranscript(n, 0)],
  ['lastTranscriptTs', (s, n) => s.lastTranscriptTs(n)],
  ['readTranscriptPage', (s, n) => s.readTranscriptPage(n, { limit: 1 })],
  ['transcriptUsage', (s, n) => s.transcriptUsage(n)],
  ['removeTranscript', (s, n) => s.removeTranscript(n)],
  ['appendParticipant', (s, n) => s.appendParticipant(n, 'u1')],
  ['readParticipants', (s, n) => s.readParticipants(n)],
  ['removeParticipants', (s, n) => s.removeParticipants(n)],
  ['removeSession with purge', (s, n) => s.removeSession(n, { purge: true })],
];
