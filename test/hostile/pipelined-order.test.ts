// One connection's requests apply in arrival order (README, "Ordering and lifecycle"), also when
// they are pipelined: writes behind writes run at once and the store's queues keep their order.
// A generated sequence of valid writes and reads over a few names runs on two servers with the
// same starting state: once pipelined in one write, once one request at a time. Every answer and
// every file must be the same.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { tempDir } from '../helpers/temp-dir.js';
import type { Message } from '../helpers/wire.js';
import { frame } from '../helpers/wire.js';
import type { WireServer } from './wire-server.js';
import { wireServer } from './wire-server.js';

interface Request {
  method: string;
  params: Record<string, unknown>;
}

const name = fc.constantFrom('a', 'b', 'c');
const request: fc.Arbitrary<Request> = fc.oneof(
  { weight: 2, arbitrary: name.map((n) => ({ method: 'session/add', params: { session: { name: n } } })) },
  { weight: 2, arbitrary: fc.tuple(name, fc.option(fc.boolean(), { nil: undefined })).map(([n, purge]) => ({ method: 'session/remove', params: { name: n, ...(purge === undefined ? {} : { purge }) } })) },
  { weight: 1, arbitrary: fc.tuple(name, fc.constantFrom('r1', 'r2')).map(([n, resumeToken]) => ({ method: 'session/setResumeToken', params: { name: n, resumeToken } })) },
  {
    weight: 4,
    arbitrary: fc.tuple(name, fc.nat(99), fc.option(fc.constant(false), { freq: 4, nil: undefined })).map(([n, k, requireSession]) => ({
      method: 'transcript/append',
      params: { name: n, entry: { ts: `t${k}`, role: 'user', text: `x${k}` }, ...(requireSession === undefined ? {} : { requireSession }) },
    })),
  },
  { weight: 2, arbitrary: name.map((n) => ({ method: 'transcript/remove', params: { name: n } })) },
  {
    weight: 3,
    arbitrary: fc.tuple(name, fc.constantFrom('u1', 'u2', 'u3'), fc.option(fc.constant(false), { freq: 4, nil: undefined })).map(([n, userId, requireSession]) => ({
      method: 'participants/append',
      params: { name: n, userId, ...(requireSession === undefined ? {} : { requireSession }) },
    })),
  },
  { weight: 2, arbitrary: name.map((n) => ({ method: 'participants/remove', params: { name: n } })) },
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom('transcript/read', 'participants/read', 'session/find'), name).map(([method, n]) => ({ method, params: { name: n } })) },
);

/** Per name: a session row or not, some entries and participants already there. */
const start = fc.record({
  names: fc.array(fc.record({ name, session: fc.boolean(), entries: fc.nat(2), participants: fc.nat(2) }), { maxLength: 3 }),
  // Restarted after the setup: nothing is loaded, every transcript and journal loads on first use.
  restart: fc.boolean(),
});

interface Running {
  stop(): Promise<void>;
  connect(): ReturnType<WireServer['connect']>;
}

/** The wire tests' in-process server on `dir`, stopped by `stop()` rather than at the test's end (a property runs many). */
async function serve(dir: string): Promise<Running> {
  const stops: (() => void | Promise<void>)[] = [];
  const server = await wireServer({ after: (fn) => stops.push(fn) }, {}, undefined, dir);
  return {
    stop: async () => {
      for (const stop of stops.splice(0)) await stop();
    },
    connect: () => server.connect('ndjson'),
  };
}

/** What may differ between two servers doing the same: a session's incarnation is fresh each time. */
function normal(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value ?? null, (k, v: unknown) => (k === 'incarnation' ? 'INC' : v))) as unknown;
}

/** An answer without what legitimately differs: a result, or an error's code and kind. */
function answer(m: Message): unknown {
  if (m.error) return { error: m.error.code, kind: (m.error.data as { kind?: unknown } | undefined)?.kind };
  return { result: normal(m.result) };
}

/**
 * The files that hold the data: transcripts, participant journals and state.json's sessions.
 * Summaries and metas are caches of what a transcript's file says (docs/durability.md), and the
 * rest of state.json (its revision and the like) is not what the sequence is about.
 */
function files(dir: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const sub of ['transcripts', 'participants']) {
    const d = path.join(dir, sub);
    if (!existsSync(d)) continue;
    for (const f of readdirSync(d).sort()) if (f.endsWith('.jsonl') || f.endsWith('.log')) out[`${sub}/${f}`] = readFileSync(path.join(d, f), 'utf8');
  }
  const state = path.join(dir, 'state.json');
  out.sessions = existsSync(state) ? normal((JSON.parse(readFileSync(state, 'utf8')) as { sessions?: unknown }).sessions) : null;
  return out;
}

let ids = 1;

/** Runs `setup`, restarts or not, then `run` pipelined or one by one, in a fresh state dir; the answers and files. */
async function play(restart: boolean, setup: Request[], run: Request[], pipelined: boolean): Promise<{ answers: unknown[]; files: Record<string, unknown> }> {
  const dir = tempDir('hs-order-');
  let server = await serve(dir);
  try {
    let c = await server.connect();
    for (const r of setup) {
      const reply = await c.response(c.send(r.method, r.params));
      assert.ok(reply.result !== undefined, `setup ${r.method} ${JSON.stringify(r.params)}: ${JSON.stringify(reply.error)}`);
    }
    if (restart) {
      await server.stop();
      server = await serve(dir);
      c = await server.connect();
    }
    const mine = run.map(() => ids++);
    let replies: Message[];
    if (pipelined) {
      c.writeBytes(Buffer.concat(run.map((r, i) => frame('ndjson', JSON.stringify({ jsonrpc: '2.0', id: mine[i], method: r.method, params: r.params })))));
      replies = await Promise.all(mine.map((id) => c.response(id)));
    } else {
      replies = [];
      for (const [i, r] of run.entries()) {
        c.sendBody(JSON.stringify({ jsonrpc: '2.0', id: mine[i], method: r.method, params: r.params }));
        replies.push(await c.response(mine[i] as number));
      }
    }
    await server.stop();
    return { answers: replies.map(answer), files: files(dir) };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

function setupOf(names: { name: string; session: boolean; entries: number; participants: number }[]): Request[] {
  const out: Request[] = [];
  const seen = new Set<string>();
  for (const n of names) {
    if (n.session && !seen.has(n.name)) out.push({ method: 'session/add', params: { session: { name: n.name } } });
    seen.add(n.name);
    for (let i = 0; i < n.entries; i++) out.push({ method: 'transcript/append', params: { name: n.name, entry: { ts: `s${i}`, role: 'user', text: 'setup' }, requireSession: false } });
    for (let i = 0; i < n.participants; i++) out.push({ method: 'participants/append', params: { name: n.name, userId: `p${i}`, requireSession: false } });
  }
  return out;
}

// A seed drawn per run, as fast-check does by default, so every run tries new sequences; a
// failure prints its seed and the shrunk sequence. Reproduce or hunt with FUZZ_SEED=<n>
// FUZZ_RUNS=<n>.
const options = (runs: number): fc.Parameters<unknown> => ({
  numRuns: Number(process.env.FUZZ_RUNS ?? runs),
  includeErrorInReport: true,
  ...(process.env.FUZZ_SEED === undefined ? {} : { seed: Number(process.env.FUZZ_SEED) }),
});

test('a pipelined sequence of writes and reads answers and leaves the files as the same requests one at a time', { timeout: 60_000 }, async () => {
  await fc.assert(
    fc.asyncProperty(start, fc.array(request, { minLength: 1, maxLength: 15 }), async (s, run) => {
      const setup = setupOf(s.names);
      const oneByOne = await play(s.restart, setup, run, false);
      const pipelined = await play(s.restart, setup, run, true);
      assert.deepEqual(pipelined.answers, oneByOne.answers, 'the answers');
      assert.deepEqual(pipelined.files, oneByOne.files, 'the files');
    }),
    options(12),
  );
});

// Found by this property (seed 619551269): an append to a session whose row was still being
// written was checked again, once the row was on disk, against every mutation accepted since, so a
// session/remove sent after it refused it (-32011) where one at a time it was added.
test('session/add, an append to it, session/remove, pipelined: the append is answered as one at a time', { timeout: 60_000 }, async () => {
  const run: Request[] = [
    { method: 'session/add', params: { session: { name: 'b' } } },
    { method: 'participants/append', params: { name: 'b', userId: 'u1' } },
    { method: 'transcript/append', params: { name: 'b', entry: { ts: 't1', role: 'user', text: 'x' } } },
    { method: 'session/remove', params: { name: 'b' } },
  ];
  const oneByOne = await play(false, setupOf([]), run, false);
  const pipelined = await play(false, setupOf([]), run, true);
  assert.deepEqual(pipelined.answers, oneByOne.answers, 'the answers');
  assert.deepEqual(pipelined.files, oneByOne.files, 'the files');
});
