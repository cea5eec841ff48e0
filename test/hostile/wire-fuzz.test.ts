// Protocol fuzzing: generated sequences of valid, almost-valid and garbage
// frames, in both framings, against an in-process server over a real socket. Every request with
// an id gets exactly one answer, the server never throws (an uncaught error fails the test run),
// and the files change only by the writes that were answered with a result.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { methods } from '../../src/protocol/table.js';
import type { Framing, Message } from '../helpers/wire.js';
import { frame } from '../helpers/wire.js';
import { wireServer } from './wire-server.js';

type Step =
  | { kind: 'request'; method: string; params: unknown }
  | { kind: 'raw'; body: Uint8Array }
  | { kind: 'envelope'; value: unknown }
  | { kind: 'cancel'; back: number };

// shutdown and exit end the server for every later run; everything else may be called.
const callable = Object.keys(methods).filter((m) => m !== 'shutdown' && m !== 'exit');
const text = fc.string({ unit: 'binary', maxLength: 40 });
const name = fc.oneof(fc.constant('a'), fc.constant('b'), fc.string({ maxLength: 8 }), fc.constant('../x'));
const entry = fc.record({ ts: text, role: fc.constantFrom('user', 'assistant', ''), text }, { requiredKeys: ['ts', 'role', 'text'] });

const validRequest: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('request' as const), method: fc.constant('transcript/append'), params: fc.record({ name, entry }) }),
  fc.record({ kind: fc.constant('request' as const), method: fc.constant('participants/append'), params: fc.record({ name, userId: text }) }),
  fc.record({
    kind: fc.constant('request' as const),
    method: fc.constantFrom('transcript/read', 'transcript/last', 'participants/read', 'session/find', 'transcript/usage'),
    params: fc.record({ name }),
  }),
  fc.record({ kind: fc.constant('request' as const), method: fc.constantFrom('session/list', 'state/get', 'session/infos'), params: fc.constant({}) }),
);
// A known or unknown method with params of any shape: most are refused, some happen to be valid.
const almostValid: fc.Arbitrary<Step> = fc.record({
  kind: fc.constant('request' as const),
  method: fc.oneof(fc.constantFrom(...callable), fc.string({ maxLength: 12 })),
  params: fc.oneof(fc.anything({ maxDepth: 3 }), fc.record({ name, entry: fc.anything({ maxDepth: 2 }) }), fc.constant(undefined)),
});
const garbage: fc.Arbitrary<Step> = fc.record({ kind: fc.constant('raw' as const), body: fc.uint8Array({ maxLength: 64 }) });
// JSON that is not a usable request: no tracked id, answered (or dropped, for notifications) as the rules say.
const envelope: fc.Arbitrary<Step> = fc.record({
  kind: fc.constant('envelope' as const),
  value: fc.oneof(
    fc.anything({ maxDepth: 2 }),
    fc.record({ jsonrpc: fc.oneof(fc.constant('2.0'), fc.constant('1.0'), fc.anything()), id: fc.oneof(fc.constant(null), fc.double(), fc.object()), method: fc.anything() }, { requiredKeys: [] }),
    fc.record({ jsonrpc: fc.constant('2.0'), method: fc.string({ maxLength: 10 }), params: fc.anything({ maxDepth: 2 }) }),
    fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer(), result: fc.anything({ maxDepth: 1 }) }),
    // vscode-jsonrpc read these params unguarded: without them the process died.
    fc.record({ jsonrpc: fc.constant('2.0'), method: fc.constant('$/cancelRequest'), params: fc.anything({ maxDepth: 1 }) }, { requiredKeys: ['jsonrpc', 'method'] }),
  ),
});
const cancel: fc.Arbitrary<Step> = fc.record({ kind: fc.constant('cancel' as const), back: fc.nat(5) });
const steps = fc.array(fc.oneof({ weight: 4, arbitrary: validRequest }, { weight: 3, arbitrary: almostValid }, { weight: 2, arbitrary: garbage }, { weight: 2, arbitrary: envelope }, { weight: 1, arbitrary: cancel }), { maxLength: 25 });

/**
 * Every file under `dir` with its bytes, but for a transcript's summary: a cache of what its
 * file says, left whenever the store lets go of the transcript (an idle one is closed, in the
 * background), so a read alone may write it, through its temp file `<name>.summary.<n>`
 * (docs/durability.md, "Restart in O(sessions)").
 */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d)) {
      const p = path.join(d, e);
      if (statSync(p).isDirectory()) walk(p);
      else if (!p.endsWith('.sock') && !p.endsWith('.lock') && !/\.summary(\.\d+)?$/.test(p)) out.set(path.relative(dir, p), readFileSync(p, 'latin1'));
    }
  };
  walk(dir);
  return out;
}

/** `body` as an NDJSON line of garbage: no newline, and no "c"/"C" where the framing is chosen. */
function ndjsonGarbage(body: Buffer): Buffer {
  const line = Buffer.from(body.filter((b) => b !== 0x0a));
  const first = line.findIndex((b) => b !== 0x20 && b !== 0x09 && b !== 0x0d);
  if (first !== -1 && (line[first] === 0x63 || line[first] === 0x43)) line[first] = 0x3f; // ?
  return line;
}

const A_FILE = path.join('transcripts', 'a.jsonl');
const lines = (bytes: string | undefined): number => (bytes ?? '').split('\n').filter(Boolean).length;

test('fuzzed frames in both framings: one answer per request, no crash, files change only by answered writes', { timeout: 60_000 }, async (t) => {
  const w = await wireServer(t);
  const setup = await w.connect('ndjson');
  await setup.call('session/add', { session: { name: 'a' } });
  let nextId = 1;
  await fc.assert(
    fc.asyncProperty(fc.constantFrom<Framing>('ndjson', 'lsp'), steps, async (framing, run) => {
      const before = snapshot(w.dir);
      const c = await w.connect(framing);
      const ids: number[] = [];
      const methodOf = new Map<number, string>();
      const nameOf = new Map<number, string>();
      const bytes: Buffer[] = [];
      for (const step of run) {
        if (step.kind === 'request') {
          const id = nextId++;
          ids.push(id);
          methodOf.set(id, step.method);
          const n = (step.params as { name?: unknown } | null | undefined)?.name;
          if (typeof n === 'string') nameOf.set(id, n);
          bytes.push(frame(framing, JSON.stringify({ jsonrpc: '2.0', id, method: step.method, ...(step.params === undefined ? {} : { params: step.params }) })));
        } else if (step.kind === 'cancel') {
          const id = ids[ids.length - 1 - step.back] ?? 0;
          bytes.push(frame(framing, JSON.stringify({ jsonrpc: '2.0', method: '$/cancelRequest', params: { id } })));
        } else if (step.kind === 'raw') {
          // Garbage inside a well-delimited frame: an NDJSON line has no newline of its own, and
          // does not start with "c" or "C" (after whitespace): as a connection's first bytes that
          // is how an LSP client starts (Content-Length), and the server reads it so.
          const body = Buffer.from(step.body);
          bytes.push(frame(framing, framing === 'ndjson' ? ndjsonGarbage(body) : body));
        } else {
          const json = JSON.stringify(step.value) ?? 'null';
          bytes.push(frame(framing, json));
        }
      }
      // One write, split at random-ish points by the kernel: frames cross chunk boundaries.
      c.writeBytes(Buffer.concat(bytes));
      const answers = await Promise.all(ids.map((id) => c.response(id)));
      // A last round trip: anything still to come for these ids would have come before its answer.
      const sentinel = nextId++;
      c.sendBody(JSON.stringify({ jsonrpc: '2.0', id: sentinel, method: 'session/list', params: {} }));
      await c.response(sentinel);
      for (const id of ids) {
        const n = c.received.filter((m: Message) => m.id === id && m.method === undefined).length;
        assert.equal(n, 1, `request ${id} (${methodOf.get(id)}) got ${n} answers`);
      }
      c.socket.destroy();

      const after = snapshot(w.dir);
      const succeeded = answers.filter((a) => a.result !== undefined && methods[methodOf.get(a.id as number) as keyof typeof methods]?.mutates === true);
      if (succeeded.length === 0) {
        assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort(), 'no file appears or goes without a write');
        for (const [file, content] of before) assert.ok(after.get(file) === content, `${file} changed without a write answered with a result`);
      }
      // Each append answered with a seq is one more line in the file, and nothing else is. A
      // transcript/remove of a answered with a result empties it first: the writes of one
      // connection are applied in the order they were sent (ids rise with it), so the file then
      // holds the appends answered after the last such remove, and only those.
      const toA = (a: Message, method: string): boolean => methodOf.get(a.id as number) === method && nameOf.get(a.id as number) === 'a';
      const lastRemove = Math.max(0, ...succeeded.filter((a) => toA(a, 'transcript/remove')).map((a) => a.id as number));
      const appendsToA = succeeded.filter((a) => toA(a, 'transcript/append') && (a.id as number) > lastRemove).length;
      const kept = lastRemove === 0 ? lines(before.get(A_FILE)) : 0;
      assert.equal(lines(after.get(A_FILE)), kept + appendsToA);
    }),
    {
      numRuns: 60,
      includeErrorInReport: true,
      ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}),
      // Run first every time: a remove of a between its appends (the shape of a counterexample
      // the property's own count once got wrong).
      examples: [
        [
          'ndjson',
          [
            { kind: 'request', method: 'transcript/append', params: { name: 'a', entry: { ts: 't1', role: 'user', text: 'before' } } },
            { kind: 'request', method: 'transcript/remove', params: { name: 'a' } },
            { kind: 'request', method: 'transcript/append', params: { name: 'a', entry: { ts: 't2', role: 'user', text: 'after' } } },
          ],
        ],
      ],
    },
  );
  // And the server is still there for a new client.
  const last = await w.connect('lsp');
  assert.ok(await last.call('session/list', {}));
});
