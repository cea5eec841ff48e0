// The ordered stop as a test sees it (test/server/service-stop.test.ts in process,
// test/e2e/serve-stop.test.ts through `serve`): its step lines in order, the appends sent before
// it answered and kept, the lock released.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Store } from '../../src/store/store.js';
import type { LogLine } from './server.js';
import { statePathIn } from './temp-dir.js';
import type { RawClient } from './wire.js';

export const APPENDS = 20;
const STEPS = ['stopping', 'closed', 'feed closed', 'answered', 'finished', 'stopped'];

const entry = (text: string) => ({ ts: '2025-01-01T00:00:00Z', role: 'user', text });

/** What the stop looked like: its step lines in order, and what existed when the listener had closed. */
export interface StopSeen {
  lines: LogLine[];
  /** At the "closed" step: whether the socket file and the server record were still there. */
  atClosed?: { socket: boolean; record: boolean };
}

const stepOf = (l: LogLine): string | undefined => (l.msg === 'stopping' || l.msg === 'stopped' ? l.msg : typeof l.step === 'string' ? l.step : undefined);

/** Asserts the ordered stop: every step once, in order, the why and code given, nothing at error. */
export function assertOrderedStop(seen: StopSeen, why: string, code: number): void {
  const steps = seen.lines.map(stepOf).filter((s): s is string => s !== undefined);
  assert.deepEqual(steps, STEPS, `the stop's steps, in order; lines:\n${seen.lines.map((l) => JSON.stringify(l)).join('\n')}`);
  assert.equal(seen.lines.find((l) => l.msg === 'stopping')?.why, why);
  assert.equal(seen.lines.find((l) => l.msg === 'stopped')?.code, code);
  const answered = seen.lines.find((l) => l.step === 'answered');
  assert.equal(answered?.level, 20, 'every request was answered within the grace period');
  const errors = seen.lines.filter((l) => l.level >= 50);
  assert.deepEqual(errors, [], 'no error line');
}

/** Sends `APPENDS` appends to `name` without waiting; resolves with their replies. */
export function pipelineAppends(rpc: RawClient, name: string): Promise<unknown[]> {
  const ids = Array.from({ length: APPENDS }, (_, i) => rpc.send('transcript/append', { name, entry: entry(`e${i}`) }));
  return Promise.all(ids.map(async (id) => {
    const reply = await rpc.response(id);
    assert.equal(reply.error, undefined, JSON.stringify(reply));
    return reply.result;
  }));
}

/** The appends all answered, all in the file, in order; the lock released (the store opens again). */
export async function assertWritesKept(dir: string, replies: unknown[]): Promise<void> {
  assert.deepEqual(replies, Array.from({ length: APPENDS }, (_, i) => ({ seq: i })));
  const lines = readFileSync(path.join(dir, 'transcripts/a.jsonl'), 'utf8').trimEnd().split('\n');
  assert.deepEqual(lines.map((l) => (JSON.parse(l) as { text: string }).text), Array.from({ length: APPENDS }, (_, i) => `e${i}`));
  const again = await Store.open(statePathIn(dir));
  await again.close();
}
