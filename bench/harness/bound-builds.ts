// Copies of the built CLI bundle with one part of an append's work taken out, for bench/bounds.ts:
// each copy tells how fast appends could be without that part, so what bounds the non-durable
// append rate against the bare echo is measured, not guessed. They skip the
// contract's validation or the store, so they are only ever written beside the build (dist/bounds,
// removed when bench/bounds.ts exits) and run from there, never shipped.
//
// A copy is the bundle's text with exact substrings replaced. When the bundle no longer holds one
// (the code it names changed), making that copy throws, and test/bench/bound-builds.test.ts fails
// on the bundle `npm test` builds: a stale bound never measures something else unnoticed.
//
// The bundle is dist/src/cli-main.js, run by the bin beside it (src/cli.ts): a copy is a folder
// with the bin, the changed bundle and the writer thread's worker, without the code cache (the
// bin would not use it for another bundle: it checks a hash).
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Patch {
  /** Text the bundle holds exactly once. */
  readonly find: string;
  readonly replace: string;
}

export interface BoundBuild {
  readonly name: string;
  /** What the copy leaves out of `transcript/append`, said in the printed table. */
  readonly leavesOut: string;
  readonly patches: readonly Patch[];
  /** Names the replacements use from the bundle's own scope: each must be declared in it. */
  readonly uses: readonly string[];
}

/** The append handler as built: validated params in, the store's seq out. */
const APPEND_HANDLER = '"transcript/append":async(p,{store})=>({seq:await store.appendTranscript(p.name,p.entry,appendOptions(p))})';
/** dispatch's validation of every call's params against the method's schema. */
const VALIDATION = 'let parsed=methods[method].params.safeParse(rawParams)';

const noValidation: Patch = {
  find: VALIDATION,
  replace: `let parsed=method==="transcript/append"?{success:true,data:rawParams}:methods[method].params.safeParse(rawParams)`,
};

/**
 * The least an append must do: encode the line and write it to the session's file through the
 * writer thread before answering. No row check, name cache, commit queue, seq file or change feed;
 * one descriptor per name, kept open, in the folder HS_BOUND_DIR names.
 */
const minimalStoreWith = (write: string): Patch => ({
  find: APPEND_HANDLER,
  replace:
    '"transcript/append":async(p)=>{const b=globalThis.__hsBound??={files:new Map(),seq:0};let fd=b.files.get(p.name);' +
    'if(fd===undefined){fd=require("node:fs").openSync(require("node:path").join(process.env.HS_BOUND_DIR,p.name+".jsonl"),"a");b.files.set(p.name,fd)}' +
    `const line=Buffer.from(encodeTranscriptLine(p.entry));${write};return{seq:b.seq++}}`,
});
const minimalStore = minimalStoreWith('await writer.write(fd,line)');
/** The same with write(2) on the event loop, which the server must not do: it bounds what the hand-off costs. */
const minimalStoreBlocking = minimalStoreWith('require("node:fs").writeSync(fd,line)');

const noStore: Patch = { find: APPEND_HANDLER, replace: '"transcript/append":async()=>({seq:0})' };

/**
 * The ceiling of the non-durable append target (bench/targets.ts): everything the contract needs
 * (validation, the line's encoding, its write through the writer thread before the answer) and no
 * bookkeeping. bench/append.bench.ts runs it beside the build in every full bench.
 */
export const MINIMAL_STORE_BUILD: BoundBuild = {
  name: 'minimal store',
  leavesOut: 'the store, but for encoding the line and writing it through the writer thread',
  patches: [minimalStore],
  uses: ['writer', 'encodeTranscriptLine', 'require'],
};

export const BOUND_BUILDS: readonly BoundBuild[] = [
  { name: 'as built', leavesOut: 'nothing', patches: [], uses: [] },
  { name: 'no validation', leavesOut: 'the params\' validation (zod)', patches: [noValidation], uses: [] },
  MINIMAL_STORE_BUILD,
  { name: 'minimal store, no validation', leavesOut: 'both of the above', patches: [minimalStore, noValidation], uses: ['writer', 'encodeTranscriptLine', 'require'] },
  { name: 'minimal store, no validation, write(2) on the event loop', leavesOut: 'both, and the hand-off to the writer thread (blocking, so never shipped)', patches: [minimalStoreBlocking, noValidation], uses: ['encodeTranscriptLine', 'require'] },
  { name: 'no store, no validation', leavesOut: 'validation and all of the store: it answers {seq: 0}', patches: [noStore, noValidation], uses: [] },
];

/**
 * Whether the bundle declares `name` at its top level (esbuild renames on a clash: writer2) or takes
 * it from the bin (its wrapper's parameters: require…). A module the bundle evaluates on first use
 * (one the CLI imports with import()) has its names declared together, `var a,b,writer,init_x=…`.
 */
function declares(bundle: string, name: string): boolean {
  const params = /^\(function \(([^)]*)\)/.exec(bundle)?.[1]?.split(/,\s*/) ?? [];
  return params.includes(name) || new RegExp(`(?:^|[^\\w$.])(?:function\\s+|(?:var|let|const)\\s+(?:[\\w$]+,)*)${name}\\b`, 'm').test(bundle);
}

/** The bundle's text for `build`; throws naming what the bundle no longer holds. */
export function boundBundle(bundle: string, build: BoundBuild): string {
  let out = bundle;
  for (const p of build.patches) {
    const at = out.indexOf(p.find);
    if (at < 0 || out.indexOf(p.find, at + 1) >= 0) {
      throw new Error(`bound build "${build.name}": the bundle holds ${at < 0 ? 'no' : 'more than one'} ${JSON.stringify(p.find.slice(0, 60))}…; update bench/harness/bound-builds.ts`);
    }
    out = out.slice(0, at) + p.replace + out.slice(at + p.find.length);
  }
  for (const name of build.uses) {
    if (!declares(bundle, name)) throw new Error(`bound build "${build.name}": the bundle no longer declares ${name}; update bench/harness/bound-builds.ts`);
  }
  return out;
}

/** The bundle the bin `cli` runs. */
export function bundleOf(cli: string): string {
  return path.join(path.dirname(cli), 'cli-main.js');
}

/** Writes a runnable copy of the build of bin `cli` into `folder`, with `bundle` as its CLI bundle; returns the copy's bin. */
export function writeBoundCopy(cli: string, folder: string, bundle: string): string {
  mkdirSync(folder, { recursive: true });
  // package.json: the bin's, which makes it a CommonJS script (scripts/bundle-cli.mjs).
  for (const f of ['cli.js', 'package.json', 'writer-worker.cjs']) copyFileSync(path.join(path.dirname(cli), f), path.join(folder, f));
  writeFileSync(bundleOf(path.join(folder, 'cli.js')), bundle);
  return path.join(folder, 'cli.js');
}
