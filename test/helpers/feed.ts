// What the change-feed, paging, usage and lifetime e2e tests share: a typed client closed when its
// test ends, an inbox of the notifications it receives, entries whose text names them, the lines
// of a transcript as the file holds them, and a compaction forced by appending big entries.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { ResponseError } from 'vscode-jsonrpc';
import type { NotificationName } from '../../src/protocol/table.js';
import type { StateClient } from '../../src/client/client.js';
import { connect } from '../../src/client/client.js';
import type { TranscriptEntry } from '../../src/protocol/model.js';
import { COMPACT_TRIGGER_BYTES } from '../../src/store/transcript-compact.js';
import type { Ctx } from './cli.js';

/** A safety net only: a hung server fails the test instead of the run. Generous: on a 2-core machine under load 20, correct tests took over 30 s. */
export const TIMEOUT = 120_000;

/** The typed client on `socket`, closed when the test ends. */
export async function typedClient(t: Ctx, socket: string, framing: 'lsp' | 'ndjson' = 'lsp'): Promise<StateClient> {
  const client = await connect({ socket, framing, timeoutMs: 10_000 });
  t.after(() => client.close());
  return client;
}

export interface Note {
  method: string;
  params: Record<string, unknown>;
}

/**
 * Every notification of the given methods a client receives, in arrival order. `onArrival` runs
 * inside the handler, before the next message is processed (to look at the files right then).
 */
export class Inbox {
  readonly notes: Note[] = [];
  private waiters: { match(n: Note): boolean; resolve(n: Note): void }[] = [];

  constructor(client: StateClient, methods: readonly NotificationName[], onArrival?: (n: Note) => void) {
    for (const method of methods) {
      client.onNotification(method, (params) => {
        const n = { method, params: params as Record<string, unknown> };
        onArrival?.(n);
        this.notes.push(n);
        this.waiters = this.waiters.filter((w) => {
          if (!w.match(n)) return true;
          w.resolve(n);
          return false;
        });
      });
    }
  }

  /** The first received notification that matches, now or once it arrives. */
  waitFor(match: (n: Note) => boolean): Promise<Note> {
    const got = this.notes.find(match);
    if (got) return Promise.resolve(got);
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  of(method: string): Record<string, unknown>[] {
    return this.notes.filter((n) => n.method === method).map((n) => n.params);
  }
}

/** An entry whose text says which it is. */
export const entry = (text: string, extra: Partial<TranscriptEntry> = {}): TranscriptEntry => ({
  ts: '2026-01-01T00:00:00Z',
  role: 'user',
  text,
  ...extra,
});

/** The part of a text before its first ":" (big texts are `<tag>:xxxx…`). */
export const tagOf = (text: string): string => text.split(':', 1)[0] as string;

export const transcriptFile = (dir: string, name: string): string => path.join(dir, 'transcripts', `${name}.jsonl`);
export const journalFile = (dir: string, name: string): string => path.join(dir, 'participants', `${name}.log`);
export const metaFile = (dir: string, name: string): string => path.join(dir, '.herrscher-state', 'transcripts', `${name}.json`);

/** The entries of a transcript as the file holds them now (none when missing). */
export function fileEntries(file: string): TranscriptEntry[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as TranscriptEntry);
}

/** A validator for assert.rejects: a typed-client error with this code (and data, when given). */
export const rpcError = (code: number, data?: unknown) => (err: unknown) => {
  assert.equal((err as ResponseError).code, code, `error code of ${String(err)}`);
  if (data !== undefined) assert.deepEqual((err as ResponseError).data, data, `error data of ${String(err)}`);
  return true;
};

/** Texts of 300 KiB: 14 of them pass the 4 MiB trigger, whatever the file held before. */
export const BIG_TEXT_BYTES = 300 * 1024;

/**
 * Appends 300 KiB entries (texts `<prefix><i>:xxx…`, cost 0.5, tokens_in 1000) until the file
 * shrinks, i.e. a compaction ran; resolves with the tags and seqs appended. Fails when the file
 * passes the trigger without shrinking.
 */
export async function forceCompaction(client: StateClient, dir: string, name: string, prefix = 'big'): Promise<{ tag: string; seq: number; entry: TranscriptEntry }[]> {
  const file = transcriptFile(dir, name);
  const out: { tag: string; seq: number; entry: TranscriptEntry }[] = [];
  let last = existsSync(file) ? statSync(file).size : 0;
  for (let i = 0; ; i++) {
    const e = entry(`${prefix}${i}:`.padEnd(BIG_TEXT_BYTES, 'x'), { cost: 0.5, tokens_in: 1000 });
    const { seq } = await client.transcriptAppend({ name, entry: e });
    out.push({ tag: `${prefix}${i}`, seq, entry: e });
    const size = statSync(file).size;
    if (size < last) return out;
    // (other clients may append meanwhile: 64 KiB of slack for them)
    assert.ok(size <= COMPACT_TRIGGER_BYTES + BIG_TEXT_BYTES + 64 * 1024, `the file grew to ${size} bytes without a compaction`);
    last = size;
  }
}
