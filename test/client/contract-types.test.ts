// The client's generated plain types (src/client/contract-types.ts) are the contract's, exactly:
// the type-level checks below fail `npm run typecheck` when a method's params or result, a
// notification's params or a model shape differ from zod's reading of src/protocol, and the
// test fails when the committed file is not what `npm run schema` writes now.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type * as z from 'zod';
import { cachedClientTypesSource } from '../../scripts/client-types-cache.js';
import { CLIENT_TYPES_FILE } from '../../scripts/client-types-gen.js';
import type * as Plain from '../../src/client/contract-types.js';
import type * as Model from '../../src/protocol/model.js';
import type { MethodTable, NotificationTable } from '../../src/protocol/table.js';
import { REPO } from '../helpers/cli.js';
import { CLIENT_TYPES_CACHE } from '../helpers/derived-cache.js';

/** true only when A and B are the same type (not merely assignable either way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type AllTrue<T extends Record<string, boolean>> = T[keyof T];
type Holds<T extends true> = T;

export type ParamsHold = Holds<AllTrue<{ [M in keyof MethodTable]: Equal<Plain.MethodParams[M], z.input<MethodTable[M]['params']>> }>>;
export type ResultsHold = Holds<AllTrue<{ [M in keyof MethodTable]: Equal<Plain.MethodResults[M], z.output<MethodTable[M]['result']>> }>>;
export type NotificationsHold = Holds<AllTrue<{ [N in keyof NotificationTable]: Equal<Plain.NotificationParams[N], z.output<NotificationTable[N]['params']>> }>>;
export type NamesHold = Holds<Equal<Plain.MethodName, keyof MethodTable>> | Holds<Equal<Plain.NotificationName, keyof NotificationTable>>;
export type ModelHolds = Holds<
  AllTrue<{
    HomeRef: Equal<Plain.HomeRef, Model.HomeRef>;
    Session: Equal<Plain.Session, Model.Session>;
    NewSession: Equal<Plain.NewSession, Model.NewSession>;
    TranscriptEntry: Equal<Plain.TranscriptEntry, Model.TranscriptEntry>;
    StateDocument: Equal<Plain.StateDocument, Model.StateDocument>;
  }>
>;

test('src/client/contract-types.ts is what `npm run schema` writes from the contract now', { timeout: 120_000 }, () => {
  const committed = readFileSync(path.join(REPO, CLIENT_TYPES_FILE), 'utf8');
  // From the cache when the contract, the generator and the pinned compiler and zod are as in an
  // earlier run (scripts/client-types-cache.ts): the same text the compiler gave then.
  assert.equal(committed, cachedClientTypesSource(path.join(REPO, 'src/protocol'), CLIENT_TYPES_CACHE), 'stale: run `npm run schema`');
  assert.doesNotMatch(committed, /^import |import\(/m, 'the generated types import nothing');
});
