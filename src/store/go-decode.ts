// Decodes parsed JSON into our shapes with Go's encoding/json rules, so a file the Go package
// accepts loads here and one it rejects is refused (or, for a transcript line, skipped):
// case-insensitive keys, null = zero value, type mismatches are errors, ints must be integer literals.
import type { GoField, GoKind } from '../protocol/model.js';
import { MAX_SAFE_COUNT, entryGoFields, homeGoFields, sessionGoFields, stateGoFields } from '../protocol/model.js';
import { wellFormed } from './go-text.js';

export class DecodeError extends Error {
  constructor(readonly path: string, readonly rule: string) {
    super(`${path}: ${rule}`);
  }
}

interface Spec {
  readonly byKey: ReadonlyMap<string, GoField>;
  readonly byFold: ReadonlyMap<string, GoField>;
  /** Whether keys matching no field are kept (state and session rows) or dropped (entries, as Go). */
  readonly keepUnknown: boolean;
}

function spec(fields: readonly GoField[], keepUnknown: boolean): Spec {
  const byFold = new Map<string, GoField>();
  for (const field of fields) if (!byFold.has(field.key.toLowerCase())) byFold.set(field.key.toLowerCase(), field);
  return { byKey: new Map(fields.map((x) => [x.key, x])), byFold, keepUnknown };
}

const stateSpec = spec(stateGoFields, true);
const sessionSpec = spec(sessionGoFields, true);
const homeSpec = spec(homeGoFields, false);
const entrySpec = spec(entryGoFields, false);

/** Go decodes a lone-surrogate escape ("\\ud800") as U+FFFD; JSON.parse keeps the surrogate. */
const wellFormedString = (s: string): string => (s.isWellFormed() ? s : s.toWellFormed());

const isZero = (v: unknown): boolean =>
  v === '' || v === 0 || v === false || (Array.isArray(v) && v.length === 0);

const typeName = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

function decodeValue(kind: GoKind, v: unknown, path: string): unknown {
  switch (kind) {
    case 'string':
      if (typeof v !== 'string') throw new DecodeError(path, `must be a string, got ${typeName(v)}`);
      return wellFormedString(v);
    case 'bool':
      if (typeof v !== 'boolean') throw new DecodeError(path, `must be a boolean, got ${typeName(v)}`);
      return v;
    case 'int':
    case 'uint':
      if (typeof v !== 'number' || !Number.isInteger(v)) throw new DecodeError(path, `must be an integer, got ${JSON.stringify(v)}`);
      if (kind === 'uint' && v < 0) throw new DecodeError(path, `must be >= 0, got ${v}`);
      if (Math.abs(v) > MAX_SAFE_COUNT) {
        throw new DecodeError(path, `${v} is beyond 2^53-1, which this server cannot hold exactly; lower it (0 means no cap)`);
      }
      return v;
    case 'float':
      if (typeof v !== 'number') throw new DecodeError(path, `must be a number, got ${typeName(v)}`);
      if (!Number.isFinite(v)) throw new DecodeError(path, 'must be a finite number');
      return v;
    case 'strings':
      if (!Array.isArray(v)) throw new DecodeError(path, `must be an array of strings, got ${typeName(v)}`);
      return v.map((x, i) => (x === null ? '' : decodeValue('string', x, `${path}[${i}]`)));
    case 'home':
      return decodeStruct(v, homeSpec, path);
    case 'sessions':
      if (!Array.isArray(v)) throw new DecodeError(path, `must be an array, got ${typeName(v)}`);
      return v.map((x, i) => decodeStruct(x, sessionSpec, `${path}[${i}]`));
  }
}

function decodeStruct(v: unknown, s: Spec, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (v === null) return out;
  if (typeof v !== 'object' || Array.isArray(v)) throw new DecodeError(path, `must be an object, got ${typeName(v)}`);
  for (const [key, value] of Object.entries(v as Record<string, unknown>)) {
    const field = s.byKey.get(key) ?? s.byFold.get(key.toLowerCase());
    if (!field) {
      if (s.keepUnknown) {
        checkUnknown(value, `${path}.${key}`);
        // defineProperty: a "__proto__" key is data here, not the object's prototype.
        Object.defineProperty(out, wellFormedString(key), { value: wellFormed(value), enumerable: true, writable: true, configurable: true });
      }
      continue;
    }
    const decoded = value === null ? null : decodeValue(field.kind, value, `${path}.${field.key}`);
    // A zero value of an omitempty field is dropped, so memory holds what Go would write back.
    if (decoded === null || (field.omitempty && isZero(decoded))) delete out[field.key];
    else out[field.key] = decoded;
  }
  return out;
}

/**
 * How deeply state.json may nest, in arrays and objects. Go's decoder allows 10 000 levels; this
 * server walks kept values recursively (and V8's JSON.stringify, which answers them, overflows
 * near 5 000), so it stops at 512: far beyond any real file, far below any stack limit.
 */
export const MAX_DOCUMENT_DEPTH = 512;

/** Whether JSON text nests arrays and objects deeper than `max`: one linear scan, strings skipped. */
function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i++;
        else if (d === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Why a kept value (an unknown field) could not be written back as it came, or undefined: a
 * number JSON.parse could not hold (1e400, an integer beyond 2^53, already rounded), or nesting
 * past MAX_DOCUMENT_DEPTH with `depth` levels above it. Iterative, so any depth is safe to check.
 */
export function keptValueProblem(value: unknown, path: string, depth: number): { at: string; rule: string } | undefined {
  const stack: [unknown, string, number][] = [[value, path, depth]];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [v, at, level] = top;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return { at, rule: 'holds a number beyond float64; this server would alter it on rewrite' };
      if (Number.isInteger(v) && Math.abs(v) > MAX_SAFE_COUNT) {
        return { at, rule: `holds the integer ${v} beyond 2^53-1, which this server cannot keep exactly (send it as a string)` };
      }
    } else if (v !== null && typeof v === 'object') {
      if (level + 1 > MAX_DOCUMENT_DEPTH) {
        return { at: path, rule: `is nested deeper than state.json may be (at most ${MAX_DOCUMENT_DEPTH} levels in all)` };
      }
      const kids = Array.isArray(v) ? v.map((x, i) => [x, `${at}[${i}]`] as const)
        : Object.entries(v).map(([k, x]) => [x, `${at}.${k}`] as const);
      for (let i = kids.length - 1; i >= 0; i--) {
        const [x, p] = kids[i] as readonly [unknown, string];
        stack.push([x, p, level + 1]);
      }
    }
  }
  return undefined;
}

/** An unknown field is kept and written back as parsed; one that would come back altered refuses the file. */
function checkUnknown(v: unknown, path: string): void {
  const bad = keptValueProblem(v, path, 0);
  if (bad) throw new DecodeError(bad.at, bad.rule);
}

function integerLiteralCheck(fields: readonly GoField[]): RegExp {
  const keys = fields.filter((x) => x.kind === 'int' || x.kind === 'uint').map((x) => x.key);
  return new RegExp(`"(${keys.join('|')})"\\s*:\\s*-?\\d+(?:\\.|[eE])`, 'i');
}
// JSON.parse reads 1.0 as 1; Go refuses it for an int field, so the literal is checked in the text.
const stateNonInteger = integerLiteralCheck([...sessionGoFields]);
const entryNonInteger = integerLiteralCheck(entryGoFields);

function parseJson(text: string, label: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const detail = text.trim() === '' ? 'unexpected end of JSON input' : (err as Error).message;
    throw new DecodeError(label, `invalid JSON: ${detail}`);
  }
}

/** Decodes state.json's text; `null` and `{}` are an empty state, anything but an object an error. */
export function decodeStateText(text: string, label: string): Record<string, unknown> {
  if (text.charCodeAt(0) === 0xfeff) throw new DecodeError(label, 'invalid JSON: a byte-order mark is not allowed (Go refuses it)');
  if (nestsDeeperThan(text, MAX_DOCUMENT_DEPTH)) {
    throw new DecodeError(label, `nested deeper than this server reads (at most ${MAX_DOCUMENT_DEPTH} levels of arrays and objects; Go allows 10000)`);
  }
  const value = parseJson(text, label);
  const m = stateNonInteger.exec(text);
  if (m) throw new DecodeError(label, `"${m[1]}" must be an integer literal, got a fraction or exponent`);
  const doc = decodeStruct(value, stateSpec, label);
  return doc;
}

/**
 * Decodes one transcript line as Go's ReadTranscript would, or returns undefined for a line Go
 * skips (unparsable, not an object, a type mismatch). `null` is an all-zero entry, as in Go.
 */
export function decodeTranscriptLine(line: string): Record<string, unknown> | undefined {
  if (line.charCodeAt(0) === 0xfeff) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (value !== null && (typeof value !== 'object' || Array.isArray(value))) return undefined;
  if (entryNonInteger.test(line)) return undefined;
  try {
    const e = decodeStruct(value, entrySpec, 'entry');
    return { ts: '', role: '', text: '', ...e };
  } catch {
    return undefined;
  }
}
