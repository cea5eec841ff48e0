// Decodes parsed JSON into our shapes with Go's encoding/json rules, so a file the Go package
// accepts loads here and one it rejects is refused (or, for a transcript line, skipped):
// keys matched with Go's case folding, null = zero value, type mismatches are errors, ints must be
// integer literals in their Go type's range (exact beyond 2^53: they parse as bigints).
import { closingQuote, parseExactJson } from '../common/exact-json.js';
import type { GoField, GoKind } from '../protocol/model.js';
import { entryGoFields, homeGoFields, isGoInteger, sessionGoFields, stateGoFields } from '../protocol/model.js';
import { wellFormed } from './go-text.js';
import { goFoldKey } from './key-fold.js';

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
  for (const field of fields) if (!byFold.has(goFoldKey(field.key))) byFold.set(goFoldKey(field.key), field);
  return { byKey: new Map(fields.map((x) => [x.key, x])), byFold, keepUnknown };
}

const stateSpec = spec(stateGoFields, true);
const sessionSpec = spec(sessionGoFields, true);
const homeSpec = spec(homeGoFields, false);
const entrySpec = spec(entryGoFields, false);

/** Go decodes a lone-surrogate escape ("\\ud800") as U+FFFD; JSON.parse keeps the surrogate. */
const wellFormedString = (s: string): string => (s.isWellFormed() ? s : s.toWellFormed());

const isZero = (v: unknown): boolean =>
  v === '' || v === 0 || v === 0n || v === false || (Array.isArray(v) && v.length === 0);

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
    case 'uint': {
      const type = kind === 'int' ? 'int' : 'uint64';
      if (typeof v === 'number' && !Number.isInteger(v)) throw new DecodeError(path, `must be an integer, got ${v}`);
      if (typeof v !== 'number' && typeof v !== 'bigint') throw new DecodeError(path, `must be an integer, got ${typeName(v)}`);
      if (!isGoInteger(v, type)) {
        throw new DecodeError(path, `${v} is out of range for Go's ${type} (${kind === 'uint' ? '0 to 2^64-1' : '-2^63 to 2^63-1'})`);
      }
      return v;
    }
    case 'float':
      // An integer literal past 2^53-1 parsed exactly; a float64 field holds its nearest double, as in Go.
      if (typeof v === 'bigint') return Number(v);
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
    const field = s.byKey.get(key) ?? s.byFold.get(goFoldKey(key));
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
      i = closingQuote(text, i);
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Why a kept value (an unknown field) could not be written back as it came, or undefined: a
 * number beyond float64 (1e400, which JSON.parse makes Infinity), or nesting past
 * MAX_DOCUMENT_DEPTH with `depth` levels above it. Integer literals of any size are exact
 * (bigints past 2^53-1). Iterative, so any depth is safe to check.
 */
export function keptValueProblem(value: unknown, path: string, depth: number): { at: string; rule: string } | undefined {
  const stack: [unknown, string, number][] = [[value, path, depth]];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [v, at, level] = top;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return { at, rule: 'holds a number beyond float64; this server would alter it on rewrite' };
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

/**
 * JSON.parse reads 1.0 as 1; Go refuses it for an int field, so the literal is checked in the
 * text: the first key (as Go folds it) of `fields`' integers holding a fraction or an exponent.
 */
function integerLiteralCheck(fields: readonly GoField[]): (text: string) => string | undefined {
  const ints = new Set(fields.filter((x) => x.kind === 'int' || x.kind === 'uint').map((x) => goFoldKey(x.key)));
  const literal = /"([^"\\]*)"\s*:\s*-?\d+(?:\.|[eE])/g;
  return (text) => {
    if (!/\d[.eE]/.test(text)) return undefined;
    for (const m of text.matchAll(literal)) if (ints.has(goFoldKey(m[1] as string))) return m[1];
    return undefined;
  };
}
const stateNonInteger = integerLiteralCheck([...sessionGoFields]);
const entryNonInteger = integerLiteralCheck(entryGoFields);

function parseJson(text: string, label: string): unknown {
  try {
    return parseExactJson(text);
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
  const key = stateNonInteger(text);
  if (key !== undefined) throw new DecodeError(label, `"${key}" must be an integer literal, got a fraction or exponent`);
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
    value = parseExactJson(line);
  } catch {
    return undefined;
  }
  if (value !== null && (typeof value !== 'object' || Array.isArray(value))) return undefined;
  if (entryNonInteger(line) !== undefined) return undefined;
  try {
    const e = decodeStruct(value, entrySpec, 'entry');
    return { ts: '', role: '', text: '', ...e };
  } catch {
    return undefined;
  }
}
