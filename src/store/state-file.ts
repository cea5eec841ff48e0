// state.json on disk, for the store that owns it (state-store.ts): its stamp (what tells one
// version from another without reading it), a read as Go's LoadState reads it, its text as Go's
// MarshalIndent writes it, and its atomic replace.
import path from 'node:path';
import { isErrno } from '../common/errno.js';
import { DecodeError, decodeStateText } from './go-decode.js';
import type { RowCache } from './row-cache.js';
import { encodeStateDocumentParts, UnsupportedValueError } from './go-json.js';
import { goDecodeUtf8 } from './go-text.js';
import type { Io, LineToAppend } from './io.js';
import { LineNotWritten } from './io.js';
import type { Doc } from './state-document.js';
import { emptyDocument, fromDecoded } from './state-document.js';
import type { StateKeys } from './state-keys.js';
import { ioError, StoreError } from './store-error.js';
import type { FileStamp } from './writer-sequences.js';
import { sameStamp } from './writer-sequences.js';

/** A stamp as a log line says it. */
export const describeStamp = (s: FileStamp): string => (s === null ? 'no file' : `inode ${s.ino}, ${s.size} bytes, mtime ${new Date(s.mtimeMs).toISOString()}`);

/**
 * The file's stamp, null when there is none: a synchronous lstat on the main thread (~2 µs),
 * made before every read of the document and every commit. Through the thread pool it cost a
 * hop each (a wake-up of a pool thread, then of this one), most of a mutation's time on 2 cores.
 * A disk that stalls a stat stalls the event loop for it: the stat of one file in a folder the
 * store just used, whose inode is nearly always cached.
 */
export function stampOf(io: Io, file: string): FileStamp {
  const st = io.lstatNow(file);
  return st === undefined ? null : { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
}

/**
 * state.json as Go's LoadState reads it (a missing file is the empty state; an empty or invalid
 * one is an invalid-input error naming the file), with the stamp of the version read: taken
 * before and after the read, and read again if they differ (a writer was replacing it).
 */
export async function readDocument(io: Io, file: string): Promise<{ doc: Doc; stamp: FileStamp }> {
  const base = path.basename(file);
  for (let attempt = 0; ; attempt++) {
    let text: string | undefined;
    let before: FileStamp;
    let after: FileStamp;
    try {
      before = stampOf(io, file);
      try {
        text = goDecodeUtf8(await io.readFile(file));
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err;
      }
      after = stampOf(io, file);
    } catch (err) {
      throw ioError('read', base, err);
    }
    if (!sameStamp(before, after) && attempt < 3) continue;
    let doc = emptyDocument();
    if (text !== undefined) {
      try {
        doc = fromDecoded(decodeStateText(text, base));
      } catch (err) {
        if (err instanceof DecodeError) throw new StoreError('invalid-input', err.message);
        throw err;
      }
    }
    return { doc, stamp: after };
  }
}

/**
 * state.json's bytes, in pieces the writer copies once (go-json.ts, encodeStateDocumentParts), or
 * an invalid-input StoreError for a value Go's Marshal would refuse.
 */
export function encodeDocument(doc: Doc, rows: RowCache): Buffer[] {
  try {
    return encodeStateDocumentParts(doc, rows);
  } catch (err) {
    if (err instanceof UnsupportedValueError) throw new StoreError('invalid-input', err.message);
    throw err;
  }
}

/**
 * Replaces state.json with `doc` (synced with its folder when `sync`); with `first`, after
 * appending its keys' line (a line that fails replaces nothing). Resolves with the stamp of what
 * it wrote, to tell the store's own file from someone else's later: the stamp the replace took
 * right after its rename, else a stat now. (A writer that replaces the file in between is taken
 * for the store: the documented window.)
 */
export async function writeDocument(
  io: Io, file: string, doc: Doc, rows: RowCache, sync: boolean, first?: { line: LineToAppend; keys: StateKeys },
): Promise<FileStamp> {
  const text = encodeDocument(doc, rows);
  const dir = path.dirname(file);
  try {
    // A state dir removed under us is not made again (the store's caller learns it is gone).
    const opts = { mode: 0o600, sync };
    const written = first ? await io.appendThenReplace(first.line, file, text, opts) : await io.writeAtomic(file, text, opts);
    if (sync) await io.syncDir(dir);
    return written ?? stampOf(io, file);
  } catch (err) {
    if (first && err instanceof LineNotWritten) throw await first.keys.lineFailed(err.cause);
    throw ioError('write', path.basename(file), err);
  }
}
