// The sealed line: how the store writes one JSON value into its own files (each record of the
// write-ahead log, the transcript metas and summaries, the seq high-water marks), so that a torn
// or damaged line is told from a good one, and a line of a newer format from both.
//
//   version 1      <crc32> <json>\n
//   version N ≥ 2  <crc32> v<N> <body>\n
//
// <crc32> is zlib's CRC-32 of everything between the space after it and the newline, as 8
// lowercase hex digits. The envelope never changes; only what the body means does. Version 1 is
// every line written before lines named their version: its body is the JSON value itself, so it
// starts with `{` (every value sealed is an object). A later version names itself at the start
// of the body, under the checksum: a bit flip there is damage, not another version.
//
// A version may add optional fields that earlier builds ignore without harm and stay the same
// version; a change an earlier build would misread takes the next one. A build reads every
// version up to SEALED_VERSION; a line of a newer one is neither damage nor skipped: its reader
// refuses to go on (NewerFormatError), so no build replays, renumbers or rewrites what a newer
// build wrote.
import { crc32 } from 'node:zlib';
import { StoreError } from './store-error.js';

/** The newest version this build reads, and the one it writes. */
export const SEALED_VERSION = 1;

/** What a line holds: its value, or why it is damaged, or the newer version it is in. */
export type Unsealed =
  | { readonly version: number; readonly value: unknown }
  | { readonly damaged: string }
  | { readonly newer: number };

/** zlib's CRC-32 as 8 lowercase hex digits (a sealed line's checksum; a meta's `head` uses it too). */
export const crc32Hex = (data: string | Buffer): string => crc32(data).toString(16).padStart(8, '0');
const VERSION_TAG = /^v([1-9][0-9]{0,8}) /;

/** The line (with its newline) sealing `json`, a JSON object's text, in `version` (default SEALED_VERSION). */
export function sealLine(json: string, version = SEALED_VERSION): string {
  const body = version === 1 ? json : `v${version} ${json}`;
  return `${crc32Hex(body)} ${body}\n`;
}

/** Reads one line (without its newline). */
export function unsealLine(line: string): Unsealed {
  const body = line.slice(9);
  if (line[8] !== ' ' || crc32Hex(body) !== line.slice(0, 8)) return { damaged: 'checksum mismatch' };
  const tag = VERSION_TAG.exec(body);
  const version = tag ? Number(tag[1]) : 1;
  if (version > SEALED_VERSION) return { newer: version };
  let value: unknown;
  try {
    value = JSON.parse(tag ? body.slice(tag[0].length) : body);
  } catch {
    return { damaged: 'not JSON' };
  }
  return { version, value };
}

/** Whether `text` has the shape of a sealed line at all (a checksum and a space first). */
export const looksSealed = (text: string): boolean => /^[0-9a-f]{8} /.test(text);

/**
 * A line of a format newer than this build reads: the start (or the read) stops here, naming the
 * file and the version, and nothing is changed on disk.
 */
export class NewerFormatError extends StoreError {
  constructor(rel: string, version: number, where = '') {
    super('io', `${rel}${where ? ` ${where}` : ''} is in format version ${version}, newer than this build reads (up to ${SEALED_VERSION}): `
      + 'a newer herrscher-state wrote it; run that version or a later one on this state dir (nothing was changed)',
    { code: 'EFORMAT', file: rel, version }, 'EFORMAT');
  }
}
