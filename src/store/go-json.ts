// A JSON encoder that writes the bytes Go's encoding/json writes, so files we write are
// byte-identical to the Go package's: HTML-safe escapes, U+2028/9, struct key order, omitempty,
// MarshalIndent layout. JSON.stringify differs on all of these.
import type { GoField } from '../protocol/model.js';
import { entryGoFields, homeGoFields, isGoInteger, sessionGoFields, stateGoFields } from '../protocol/model.js';
import { MAX_DOCUMENT_DEPTH } from './go-decode.js';
import type { RowCache } from './row-cache.js';

const NEEDS_ESCAPE = /[\u0000-\u001f"\\<>&\u2028\u2029\ud800-\udfff]/;
const HEX = '0123456789abcdef';

/** Go's string encoding (Go >= 1.22 escapes): lone surrogates become \ufffd as invalid UTF-8 does. */
export function encodeGoString(s: string): string {
  if (!NEEDS_ESCAPE.test(s)) return `"${s}"`;
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let rep: string | undefined;
    if (c < 0x20) {
      rep = c === 0x0a ? '\\n' : c === 0x0d ? '\\r' : c === 0x09 ? '\\t' : c === 0x08 ? '\\b' : c === 0x0c ? '\\f'
        : `\\u00${HEX[c >> 4]}${HEX[c & 15]}`;
    } else if (c === 0x22) rep = '\\"';
    else if (c === 0x5c) rep = '\\\\';
    else if (c === 0x3c) rep = '\\u003c';
    else if (c === 0x3e) rep = '\\u003e';
    else if (c === 0x26) rep = '\\u0026';
    else if (c === 0x2028) rep = '\\u2028';
    else if (c === 0x2029) rep = '\\u2029';
    else if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) { i++; continue; }
      rep = '\\ufffd';
    } else if (c >= 0xdc00 && c <= 0xdfff) rep = '\\ufffd';
    if (rep === undefined) continue;
    out += s.slice(start, i) + rep;
    start = i + 1;
  }
  return out + s.slice(start) + '"';
}

/** Go rejects NaN and ±Inf (`json: unsupported value`) where JS would write null. */
export class UnsupportedValueError extends Error {
  constructor(readonly path: string, value: unknown, reason = 'JSON has no NaN or Infinity') {
    super(`${path}: unsupported value ${String(value)} (${reason})`);
  }
}

/**
 * Go's int and uint64 fields hold integers of their range (a bigint past 2^53-1). Refused here,
 * since a file holding 1.5, -1 for a uint64 or 2^64 would load neither in Go nor in this store.
 */
function checkInteger(field: GoField, v: unknown, path: string): void {
  if (field.kind !== 'int' && field.kind !== 'uint') return;
  const type = field.kind === 'int' ? 'int' : 'uint64';
  if (!isGoInteger(v, type)) {
    const range = type === 'uint64' ? '0..2^64-1' : '-2^63..2^63-1';
    throw new UnsupportedValueError(path, v, `must be an integer in ${range} (Go ${type})`);
  }
}

function encodeNumber(n: number, path: string): string {
  if (!Number.isFinite(n)) throw new UnsupportedValueError(path, n);
  // ES and Go agree on the shortest round-trip form (1e-7, 1e+21); only -0 differs.
  return Object.is(n, -0) ? '-0' : String(n);
}

/**
 * Encodes any JSON value (kept unknown fields) with Go's string rules, keys in insertion order.
 * Recursive, so it refuses nesting past what a state.json may hold (`depth` counts levels)
 * rather than overflow the stack.
 */
function encodeAny(v: unknown, indent: string | null, prefix: string, path: string, depth = 0): string {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'string': return encodeGoString(v);
    case 'number': return encodeNumber(v, path);
    case 'bigint': return String(v);
    case 'boolean': return v ? 'true' : 'false';
    case 'object': break;
    default: throw new UnsupportedValueError(path, v);
  }
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    const inner = indent === null ? '' : prefix + indent;
    if (depth >= MAX_DOCUMENT_DEPTH) throw new UnsupportedValueError(path, 'array', `nested deeper than ${MAX_DOCUMENT_DEPTH} levels`);
    const parts = v.map((x, i) => encodeAny(x, indent, inner, `${path}[${i}]`, depth + 1));
    return indent === null ? `[${parts.join(',')}]` : `[\n${inner}${parts.join(`,\n${inner}`)}\n${prefix}]`;
  }
  if (depth >= MAX_DOCUMENT_DEPTH) throw new UnsupportedValueError(path, 'object', `nested deeper than ${MAX_DOCUMENT_DEPTH} levels`);
  const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
  return encodeMembers(entries.map(([k, x]) => [k, (p: string) => encodeAny(x, indent, p, `${path}.${k}`, depth + 1)]), indent, prefix);
}

type Member = [key: string, encode: (prefix: string) => string];

function encodeMembers(members: Member[], indent: string | null, prefix: string): string {
  if (members.length === 0) return '{}';
  if (indent === null) return `{${members.map(([k, e]) => `${encodeGoString(k)}:${e('')}`).join(',')}}`;
  const inner = prefix + indent;
  return `{\n${members.map(([k, e]) => `${inner}${encodeGoString(k)}: ${e(inner)}`).join(`,\n`)}\n${prefix}}`;
}

function isZero(kind: GoField['kind'], v: unknown): boolean {
  if (v === undefined || v === null) return true;
  switch (kind) {
    case 'string': return v === '';
    case 'bool': return v === false;
    case 'int': case 'uint': case 'float': return v === 0 || v === 0n;
    case 'strings': case 'sessions': return Array.isArray(v) && v.length === 0;
    case 'home': return false;
  }
}

/** Where a cached encode puts the rows: the cache, and the rows' block between its brackets (row-cache.ts). */
interface RowSink {
  cache: RowCache;
  parts: Buffer[];
}

/**
 * Stands where the rows go while the rest of the document is encoded as text. A raw NUL never
 * occurs in our output (strings escape it as \u0000), so the mark cannot collide with content.
 */
const ROWS_MARK = '\u0000rows\u0000';

type Nested = (v: unknown, indent: string | null, prefix: string, path: string, rows?: RowSink) => string;

const nested: Partial<Record<GoField['kind'], Nested>> = {
  home: (v, indent, prefix, path) => encodeStruct((v ?? {}) as Record<string, unknown>, homeGoFields, indent, prefix, path),
  sessions: (v, indent, prefix, path, sink) => {
    if (v === null || v === undefined) return 'null';
    const rows = v as Record<string, unknown>[];
    if (rows.length === 0) return '[]';
    if (indent === null) return `[${rows.map((r, i) => encodeStruct(r, sessionGoFields, null, '', `${path}[${i}]`)).join(',')}]`;
    const inner = prefix + indent;
    const encode = (r: Record<string, unknown>, i: number): string => encodeStruct(r, sessionGoFields, indent, inner, `${path}[${i}]`);
    if (!sink) return `[\n${inner}${rows.map(encode).join(`,\n${inner}`)}\n${prefix}]`;
    const layout = { layout: `${indent}|${inner}`, sep: Buffer.from(`,\n${inner}`) };
    sink.parts.push(Buffer.from(`[\n${inner}`), sink.cache.block(rows, layout, (r, i) => encode(r as Record<string, unknown>, i)), Buffer.from(`\n${prefix}]`));
    return ROWS_MARK;
  },
};

const ZERO: Record<GoField['kind'], unknown> = {
  string: '', bool: false, int: 0, uint: 0, float: 0, strings: null, home: undefined, sessions: null,
};

/**
 * Encodes an object as a Go struct: known fields in declaration order with omitempty, then any
 * other keys it carries (unknown fields kept from the file) in their own order.
 */
function encodeStruct(
  obj: Record<string, unknown>, fields: readonly GoField[], indent: string | null, prefix: string, path: string, rows?: RowSink,
): string {
  const members: Member[] = [];
  const known = new Set<string>();
  for (const field of fields) {
    known.add(field.key);
    const v = obj[field.key];
    if (field.omitempty && isZero(field.kind, v)) continue;
    const value = v === undefined ? ZERO[field.kind] : v;
    const sub = nested[field.kind];
    const at = `${path}.${field.key}`;
    checkInteger(field, value, at);
    members.push([field.key, (p) => (sub ? sub(value, indent, p, at, rows) : encodeAny(value, indent, p, at))]);
  }
  for (const key of Object.keys(obj)) {
    if (known.has(key) || obj[key] === undefined) continue;
    members.push([key, (p) => encodeAny(obj[key], indent, p, `${path}.${key}`)]);
  }
  return encodeMembers(members, indent, prefix);
}

/** state.json as Go's `json.MarshalIndent(s, "", "  ")`: two-space indent, no trailing newline. */
export function encodeStateDocument(doc: object): string {
  return encodeStruct(doc as Record<string, unknown>, stateGoFields, '  ', '', 'state');
}

/**
 * The same bytes as encodeStateDocument, assembled in one buffer from `cache`'s session rows:
 * only rows not encoded through it before are encoded now (what state.json's writer uses).
 */
export function encodeStateDocumentBytes(doc: object, cache: RowCache): Buffer {
  return Buffer.concat(encodeStateDocumentParts(doc, cache));
}

/**
 * The same bytes in five pieces at most, in order (the text before the rows, the brackets, the
 * rows' block, the text after), for a writer that copies them into its own buffer
 * (writer-thread.ts): a handful of copies, whatever the number of rows.
 */
export function encodeStateDocumentParts(doc: object, cache: RowCache): Buffer[] {
  const sink: RowSink = { cache, parts: [] };
  const text = encodeStruct(doc as Record<string, unknown>, stateGoFields, '  ', '', 'state', sink);
  const at = text.indexOf(ROWS_MARK);
  if (at < 0) return [Buffer.from(text, 'utf8')];
  sink.parts.unshift(Buffer.from(text.slice(0, at), 'utf8'));
  sink.parts.push(Buffer.from(text.slice(at + ROWS_MARK.length), 'utf8'));
  return sink.parts;
}

/** One transcript line as Go's `json.Marshal(e)` plus "\n". Unknown keys are not written (as Go). */
export function encodeTranscriptLine(entry: object): string {
  // The hot path of every append: plain concatenation over the field list, no closures.
  const e = entry as Record<string, unknown>;
  let out = '';
  for (const field of entryFields) {
    const v = e[field.key];
    if (field.omitempty && isZero(field.kind, v)) continue;
    const value = v === undefined ? ZERO[field.kind] : v;
    checkInteger(field, value, field.path);
    out += (out === '' ? field.open : field.next) + encodeAny(value, null, '', field.path);
  }
  return `${out}}\n`;
}

/** entryGoFields with their key text made once: `{"ts":` for the first, `,"role":` after. */
const entryFields = entryGoFields.map((f) => ({
  ...f,
  open: `{${encodeGoString(f.key)}:`,
  next: `,${encodeGoString(f.key)}:`,
  path: `entry.${f.key}`,
}));

/** A session row compact, as Go's json.Marshal would (used by tests and the wire encoder). */
export function encodeSession(row: object): string {
  return encodeStruct(row as Record<string, unknown>, sessionGoFields, null, '', 'session');
}
