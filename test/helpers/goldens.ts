// The Go goldens (test/fixtures/go-goldens.json, recorded from Herrscher's Go package; `npm run
// references` compares it with its source) and what a replay needs: appendMany expanded,
// incarnations normalised, the Go-format files of a state dir read.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const committed = path.resolve(here, '../fixtures/go-goldens.json');

export interface GoldenOp {
  method: string;
  params: Record<string, unknown>;
  expect?: unknown;
}
export interface GoldenFile {
  text?: string;
  sha256?: string;
  bytes?: number;
  lines?: number;
}
export interface Golden {
  name: string;
  about: string;
  stateFile?: string;
  ops: GoldenOp[];
  files: Record<string, GoldenFile>;
}

export function loadGoldens(): Golden[] {
  return JSON.parse(readFileSync(committed, 'utf8')) as Golden[];
}

const INC = /inc_[A-Z2-7]{26}/g;
export const normaliseIncarnations = (s: string): string => s.replace(INC, 'inc_<26>');

/** Go's sprintf for the `%04d`-style formats the goldens use. */
function sprintf(format: string, i: number): string {
  return format.replace(/%0(\d+)d/, (_m, w: string) => String(i).padStart(Number(w), '0'));
}

/** The calls an op stands for: transcript/appendMany is `count` appends. */
export function expandOp(op: GoldenOp): GoldenOp[] {
  if (op.method !== 'transcript/appendMany') return [op];
  const p = op.params as { name: string; count: number; textBytes: number; char: string; role: string; tsFormat: string };
  const text = p.char.repeat(p.textBytes);
  return Array.from({ length: p.count }, (_, i) => ({
    method: 'transcript/append',
    params: { name: p.name, entry: { ts: sprintf(p.tsFormat, i), role: p.role, text } },
  }));
}

/** Files of a state dir in the Go layout (our lock file and hidden bookkeeping are not Go's). */
export function goFiles(dir: string): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(dir, rel))) {
      if (name.startsWith('.')) continue;
      const r = rel ? `${rel}/${name}` : name;
      if (statSync(path.join(dir, r)).isDirectory()) walk(r);
      else out[r] = readFileSync(path.join(dir, r));
    }
  };
  walk('');
  return out;
}

/** Asserts the state dir holds exactly the golden's files, byte for byte (incarnations normalised). */
export function assertFilesMatch(dir: string, golden: Golden): void {
  const files = goFiles(dir);
  assert.deepEqual(Object.keys(files).sort(), Object.keys(golden.files).sort(), 'the set of files');
  for (const [rel, want] of Object.entries(golden.files)) {
    const got = files[rel] as Buffer;
    if (want.text !== undefined) {
      assert.equal(normaliseIncarnations(got.toString('utf8')), want.text, `bytes of ${rel}`);
    } else {
      assert.equal(got.length, want.bytes, `size of ${rel}`);
      assert.equal(got.toString('utf8').split('\n').length - 1, want.lines, `lines of ${rel}`);
      assert.equal(createHash('sha256').update(got).digest('hex'), want.sha256, `sha256 of ${rel}`);
    }
  }
}

/**
 * Result fields our protocol adds to Go's results (seq numbers, the state revision): a golden,
 * recorded from Go, does not have them, so they are compared only when it does.
 */
export const EXTENSION_FIELDS = ['firstSeq', 'seq', 'revision'];

/** Asserts a result equals the golden's expectation as JSON values, incarnations normalised. */
export function assertResult(got: unknown, want: unknown, what: string): void {
  const value = JSON.parse(normaliseIncarnations(JSON.stringify(got))) as unknown;
  if (value && typeof value === 'object' && want && typeof want === 'object') {
    for (const k of EXTENSION_FIELDS) if (!(k in want)) delete (value as Record<string, unknown>)[k];
  }
  assert.deepEqual(value, want, what);
}
