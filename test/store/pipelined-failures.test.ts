// Writes called in one turn (a connection's pipelined requests) while the disk refuses some of
// them: state.json rewrites, transcript or journal writes and fdatasyncs (the write-ahead log's,
// a checkpoint's) fail at random (ENOSPC, EIO through the io seam). Every answer must be the answer of the same calls made one at a time, each failed
// one having changed nothing: a sequential model, fed each call's observed success or io failure,
// must agree with every other answer, with what memory reads and with what the files hold, also
// after a reopen. One exception, said in its error: a session/remove with purge whose row removal
// was written but a file removal failed leaves the row gone and the files as they are; the
// files of that name are then not compared.
import assert from 'node:assert/strict';
import type { FileHandle } from 'node:fs/promises';
import { test } from 'node:test';
import fc from 'fast-check';
import { nodeIo, withIo } from '../../src/store/io.js';
import type { Store } from '../../src/store/store.js';
import { StoreError } from '../../src/store/store-error.js';
import { errno, newSession, openIn, reopen } from '../helpers/store.js';
import { tempDir } from '../helpers/temp-dir.js';

type Op =
  | { op: 'add'; name: string }
  | { op: 'remove'; name: string; purge: boolean }
  | { op: 'append'; name: string; text: string; requireSession: boolean }
  | { op: 'participant'; name: string; userId: string; requireSession: boolean }
  | { op: 'removeTranscript'; name: string }
  | { op: 'removeParticipants'; name: string };

const name = fc.constantFrom('a', 'b');
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: name.map((n): Op => ({ op: 'add', name: n })) },
  { weight: 2, arbitrary: fc.tuple(name, fc.boolean()).map(([n, purge]): Op => ({ op: 'remove', name: n, purge })) },
  { weight: 5, arbitrary: fc.tuple(name, fc.boolean()).map(([n, free]): Op => ({ op: 'append', name: n, text: '', requireSession: !free })) },
  { weight: 3, arbitrary: fc.tuple(name, fc.constantFrom('u1', 'u2'), fc.boolean()).map(([n, userId, free]): Op => ({ op: 'participant', name: n, userId, requireSession: !free })) },
  { weight: 1, arbitrary: name.map((n): Op => ({ op: 'removeTranscript', name: n })) },
  { weight: 1, arbitrary: name.map((n): Op => ({ op: 'removeParticipants', name: n })) },
);

/** What the store holds, as the calls that succeeded, one at a time, in call order, leave it. */
class Model {
  rows = new Set<string>();
  entries = new Map<string, string[]>();
  ids = new Map<string, string[]>();
  /** Names whose files a purge left part-way (its error said so): their files are not predicted. */
  unknown = new Set<string>();

  /** The answer `op` gets if it succeeds now, or the kind of the refusal it gets (the model unchanged); `any` when not predicted. */
  expect(op: Op): { ok: unknown } | { refused: string } | { any: true } {
    const row = this.rows.has(op.name);
    if (this.unknown.has(op.name) && op.op !== 'add' && op.op !== 'remove') {
      if ((op.op === 'append' || op.op === 'participant') && op.requireSession && !row) return { refused: 'unknown-session' };
      return { any: true };
    }
    switch (op.op) {
      case 'add':
        return row ? { refused: 'exists' } : { ok: op.name };
      case 'remove':
        return { ok: { removed: row } };
      case 'append':
        return op.requireSession && !row ? { refused: 'unknown-session' } : { ok: (this.entries.get(op.name) ?? []).length };
      case 'participant':
        return op.requireSession && !row ? { refused: 'unknown-session' } : { ok: !(this.ids.get(op.name) ?? []).includes(op.userId) };
      case 'removeTranscript':
        return { ok: (this.entries.get(op.name) ?? []).length > 0 };
      case 'removeParticipants':
        return { ok: (this.ids.get(op.name) ?? []).length > 0 };
    }
  }

  apply(op: Op): void {
    switch (op.op) {
      case 'add':
        this.rows.add(op.name);
        return;
      case 'remove':
        this.rows.delete(op.name);
        if (op.purge) {
          this.entries.delete(op.name);
          this.ids.delete(op.name);
        }
        return;
      case 'append':
        this.entries.set(op.name, [...(this.entries.get(op.name) ?? []), op.text]);
        return;
      case 'participant':
        if (!(this.ids.get(op.name) ?? []).includes(op.userId)) this.ids.set(op.name, [...(this.ids.get(op.name) ?? []), op.userId]);
        return;
      case 'removeTranscript':
        this.entries.delete(op.name);
        return;
      case 'removeParticipants':
        this.ids.delete(op.name);
    }
  }
}

/** Calls `op` on the store without awaiting it (the answer, normalised to what the model predicts). */
function call(store: Store, op: Op): Promise<unknown> {
  switch (op.op) {
    case 'add':
      return store.addSession(newSession(op.name)).then((s) => s.name);
    case 'remove':
      return store.removeSession(op.name, { purge: op.purge });
    case 'append':
      return store.appendTranscript(op.name, { ts: 't', role: 'user', text: op.text }, { requireSession: op.requireSession });
    case 'participant':
      return store.appendParticipant(op.name, op.userId, { requireSession: op.requireSession });
    case 'removeTranscript':
      return store.removeTranscript(op.name);
    case 'removeParticipants':
      return store.removeParticipants(op.name);
  }
}

async function contents(store: Store, names: string[], unknown: Set<string>): Promise<unknown> {
  const out: Record<string, unknown> = {};
  for (const n of names) {
    out[n] = unknown.has(n) ? { row: store.findSession(n) !== null } : {
      row: store.findSession(n) !== null,
      entries: (await store.readTranscript(n)).map((e) => e.text),
      ids: await store.readParticipants(n),
    };
  }
  return out;
}

function modelContents(m: Model, names: string[]): unknown {
  return Object.fromEntries(names.map((n) => [n, m.unknown.has(n) ? { row: m.rows.has(n) } : { row: m.rows.has(n), entries: m.entries.get(n) ?? [], ids: m.ids.get(n) ?? [] }]));
}

const options = (runs: number): fc.Parameters<unknown> => ({
  numRuns: Number(process.env.FUZZ_RUNS ?? runs),
  includeErrorInReport: true,
  ...(process.env.FUZZ_SEED === undefined ? {} : { seed: Number(process.env.FUZZ_SEED) }),
});

test('pipelined writes with some refused by the disk: each answer as one at a time, memory and files as the model', { timeout: 60_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(opArb, { minLength: 1, maxLength: 14 }),
      fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
      fc.array(opArb, { maxLength: 4 }),
      async (ops, failures, setup) => {
        let k = 0;
        let failing = false;
        /** The next drawn failure, while failures are on. */
        const fails = (): boolean => failing && (failures[k++ % failures.length] ?? false);
        const appendFiles = new WeakSet<FileHandle>();
        const io = withIo({
          writeAtomic: (file, data, opts) => (file.endsWith('state.json') && fails() ? Promise.reject(errno('ENOSPC')) : nodeIo.writeAtomic(file, data, opts)),
          open: async (file, flags, mode) => {
            const fh = await nodeIo.open(file, flags, mode);
            if (/\/(transcripts|participants)\/[^/]+\.(jsonl|log)$/.test(file)) appendFiles.add(fh);
            return fh;
          },
          write: (fh, buf) => (appendFiles.has(fh) && fails() ? Promise.reject(errno('ENOSPC')) : nodeIo.write(fh, buf)),
          datasync: (fh) => (fails() ? Promise.reject(errno('EIO', 'fsync')) : nodeIo.datasync(fh)),
        });
        const dir = tempDir('hs-pipefail-');
        let store = await openIn(dir, { io, lock: false });
        try {
          const model = new Model();
          // A start that is not empty: the setup's calls one at a time, no failures.
          for (const [i, op] of setup.entries()) {
            const o = { ...op, ...(op.op === 'append' ? { text: `s${i}` } : {}) } as Op;
            const want = model.expect(o);
            try {
              await call(store, o);
              model.apply(o);
            } catch (err) {
              assert.ok('refused' in want && err instanceof StoreError && err.kind === want.refused, `setup ${JSON.stringify(o)}: ${String(err)}`);
            }
          }
          const run = ops.map((op, i) => (op.op === 'append' ? { ...op, text: `x${i}` } : op));
          failing = true;
          const answers = await Promise.allSettled(run.map((op) => call(store, op)));
          failing = false;
          for (const [i, op] of run.entries()) {
            const got = answers[i] as PromiseSettledResult<unknown>;
            const want = model.expect(op);
            const what = `call ${i} ${JSON.stringify(op)}`;
            if ('any' in want) continue;
            if (got.status === 'fulfilled') {
              assert.ok('ok' in want, `${what}: answered ${JSON.stringify(got.value)}, one at a time it is refused ${JSON.stringify(want)}`);
              assert.deepEqual(got.value, want.ok, what);
              model.apply(op);
            } else {
              const err = got.reason as unknown;
              assert.ok(err instanceof StoreError, `${what}: ${String(err)}`);
              // An io refusal is the injected failure (or its batch's); any other must be the model's.
              if (err.kind !== 'io') assert.deepEqual({ refused: err.kind }, want, `${what}: refused ${err.kind}: ${err.message}`);
              if (op.op === 'remove' && /was removed, but not all of its files/.test(err.message)) {
                model.rows.delete(op.name);
                model.unknown.add(op.name);
              }
            }
          }
          const names = ['a', 'b'];
          assert.deepEqual(await contents(store, names, model.unknown), modelContents(model, names), 'memory');
          store = await reopen(store, { io, lock: false });
          assert.deepEqual(await contents(store, names, model.unknown), modelContents(model, names), 'after a reopen');
        } finally {
          await store.close();
        }
      },
    ),
    options(40),
  );
});
