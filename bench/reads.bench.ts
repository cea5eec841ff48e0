// Reads and journal appends must not slow down as files grow: transcript/last, transcript/usage
// and transcript/read (limit 200) on a 4 MiB transcript against a 4 KiB one, and
// participants/append on a 10 000-id journal against a 10-id one (issue 5 point 3). The server
// caches a transcript after its first read, so every warm measurement follows one warm-up call;
// the cold first transcript/usage after a restart is reported apart.
import { statSync } from 'node:fs';
import path from 'node:path';
import type { StateClient } from '../src/client/client.js';
import type { Bounds } from './harness/config.js';
import { ENTRY, QUICK, READ_LATENCY } from './harness/config.js';
import { LINE } from './harness/disk.js';
import { awaitEachAlternating, window } from './harness/load.js';
import type { RowSpec, Step } from './harness/report.js';
import { emit, progress, repeat, toRows } from './harness/report.js';
import { connectClient } from './harness/rpc.js';
import type { SocketProc } from './harness/servers.js';
import { startServer } from './harness/servers.js';
import { nowUs } from './harness/stats.js';
import { benchDirs } from './harness/temp-dir.js';

const BENCH = 'reads';
/** Just below the 4 MiB (4 194 304 bytes) past which an append compacts the transcript. */
const BIG_BYTES = 4_150_000;
const SMALL_BYTES = 4096;
const BIG_JOURNAL = 10_000;
const SMALL_JOURNAL = 10;
/** New ids per repetition (half to each journal): few, so the 10-id journal stays small. */
const NEW_IDS: Bounds = QUICK ? { maxCount: 60, maxMs: 500 } : { maxCount: 400, maxMs: 1000 };
/** Prefill is bounded by count; this only stops a stuck server from hanging the bench. */
const PREFILL: Bounds = { maxCount: 0, maxMs: 120_000 };

const { dir } = benchDirs(BENCH);
const state = path.join(dir, 'state/state.json');
const socket = path.join(dir, 'sync.sock');
let server: SocketProc = await startServer('reads-sync', state, socket, 'sync');
let client: StateClient = await connectClient(socket);

// ---- prefill, through the server as a bridge would fill them --------------------------------
for (const name of ['big', 'small', 'pbig']) await client.sessionAdd({ session: { name } });
const appendEntry = (name: string) => () => client.transcriptAppend({ name, entry: ENTRY });
const entries = (bytes: number): number => Math.floor(bytes / LINE.length);
await window(appendEntry('big'), 256, { ...PREFILL, maxCount: entries(BIG_BYTES) });
await window(appendEntry('small'), 256, { ...PREFILL, maxCount: entries(SMALL_BYTES) });
let idSeq = 0;
await window(() => client.participantsAppend({ name: 'pbig', userId: `u${idSeq++}` }), 256, { ...PREFILL, maxCount: BIG_JOURNAL });
const sizes = {
  big: statSync(path.join(path.dirname(state), 'transcripts/big.jsonl')).size,
  small: statSync(path.join(path.dirname(state), 'transcripts/small.jsonl')).size,
};
progress(BENCH, `prefilled: big ${sizes.big} bytes, small ${sizes.small} bytes, ${BIG_JOURNAL} participants`);

let smallJournal = '';
let newId = 0;

/** A restart, so the first usage call must read each file; then a fresh 10-id journal. */
const setup: Step = {
  name: 'restart, first transcript/usage (cold)',
  run: async (record) => {
    await client.close();
    await server.stop();
    server = await startServer('reads-sync', state, socket, 'sync');
    client = await connectClient(socket);
    // The new server's own first-request costs (a transcript with no file): paid by neither side of the pair.
    await client.transcriptLast({ name: 'pbig' });
    for (const size of ['big', 'small'] as const) {
      const t0 = nowUs();
      await client.transcriptUsage({ name: size });
      record(`cold.usage.${size}`, nowUs() - t0);
    }
    smallJournal = `psmall${newId}`;
    await client.sessionAdd({ session: { name: smallJournal } });
    for (let k = 0; k < SMALL_JOURNAL; k++) await client.participantsAppend({ name: smallJournal, userId: `u${k}` });
  },
};

type Read = 'last' | 'usage' | 'read' | 'readSame';
const read = (method: Read, name: string) => (): Promise<unknown> => {
  switch (method) {
    case 'last':
      return client.transcriptLast({ name });
    case 'usage':
      return client.transcriptUsage({ name });
    case 'read':
      return client.transcriptRead({ name, limit: 200 });
    case 'readSame':
      // As many entries as the small transcript holds: the same reply from both files.
      return client.transcriptRead({ name, limit: entries(SMALL_BYTES) });
  }
};

// Each step alternates calls on the big and the small file, so both see the same load.
const steps: Step[] = [];
for (const method of ['last', 'usage', 'read', 'readSame'] as const) {
  steps.push({
    name: `transcript/${method}, 4 MiB and 4 KiB alternating`,
    run: async (record) => {
      // The warm-up calls: the server caches a file after its first read.
      await read(method, 'big')();
      await read(method, 'small')();
      const [big, small] = await awaitEachAlternating(read(method, 'big'), read(method, 'small'), READ_LATENCY);
      record(`${method}.big`, big.p50);
      record(`${method}.small`, small.p50);
    },
  });
}
const journal = (size: 'big' | 'small'): string => (size === 'big' ? 'pbig' : smallJournal);
const participantsAppend = (size: 'big' | 'small', userId: () => string) => () => client.participantsAppend({ name: journal(size), userId: userId() });
steps.push({
  name: 'participants/append new id, 10 000 and 10 alternating',
  run: async (record) => {
    await participantsAppend('big', () => 'u1')(); // loads the journals
    await participantsAppend('small', () => 'u1')();
    const fresh = (): string => `n${newId++}`;
    const [big, small] = await awaitEachAlternating(participantsAppend('big', fresh), participantsAppend('small', fresh), NEW_IDS);
    record('participants.new.big', big.p50);
    record('participants.new.small', small.p50);
  },
});
steps.push({
  name: 'participants/append present id, 10 000 and 10 alternating',
  run: async (record) => {
    const present = (): string => 'u5';
    const [big, small] = await awaitEachAlternating(participantsAppend('big', present), participantsAppend('small', present), READ_LATENCY);
    record('participants.present.big', big.p50);
    record('participants.present.small', small.p50);
  },
});

const samples = await repeat(BENCH, steps, { setup });

const big = '4 MiB transcript';
const small = '4 KiB';
const specs: RowSpec[] = [
  { id: 'transcript.last', measurement: `transcript/last warm p50, ${big}`, unit: 'µs', ours: 'last.big', ceiling: 'last.small', ceilingLabel: small },
  { id: 'transcript.usage', measurement: `transcript/usage warm p50, ${big}`, unit: 'µs', ours: 'usage.big', ceiling: 'usage.small', ceilingLabel: small },
  { id: 'transcript.read200', measurement: `transcript/read(200) warm p50, ${big}`, unit: 'µs', ours: 'read.big', ceiling: 'read.small', ceilingLabel: small },
  { id: 'transcript.read.same', measurement: `transcript/read(${entries(SMALL_BYTES)}) warm p50 (same reply), ${big}`, unit: 'µs', ours: 'readSame.big', ceiling: 'readSame.small', ceilingLabel: small },
  { id: 'transcript.usage.cold', measurement: `first transcript/usage after restart, ${big}`, unit: 'µs', ours: 'cold.usage.big', ceiling: 'cold.usage.small', ceilingLabel: small },
  { id: 'participants.append.new', measurement: 'participants/append new id p50 (sync), 10 000 ids', unit: 'µs', ours: 'participants.new.big', ceiling: 'participants.new.small', ceilingLabel: '10 ids' },
  { id: 'participants.append.present', measurement: 'participants/append present id p50, 10 000 ids', unit: 'µs', ours: 'participants.present.big', ceiling: 'participants.present.small', ceilingLabel: '10 ids' },
];

const memory = [{ server: 'reads-sync (4 MiB transcript cached)', ...server.memory() }];
progress(BENCH, 'stopping');
await client.close();
await server.stop();

emit({
  bench: BENCH,
  rows: toRows(samples, specs),
  memory,
  notes: [
    `Transcripts: ${sizes.big} and ${sizes.small} bytes of ${LINE.length}-byte entries, filled through the server; read(200) returns 200 entries from the big one and all ${entries(SMALL_BYTES)} from the small one.`,
    'Warm: the server caches a transcript after its first read, so each warm measurement follows one warm-up call. Cold: the first transcript/usage after a server restart (one call per repetition).',
    `Each pair alternates its calls (big, small, small, big…) on one connection, so both sides see the same moment's load.`,
    `participants/append new id: ${NEW_IDS.maxCount / 2} new ids per journal and repetition, durable like every append; the 10-id journal is a fresh session each repetition. Present id: answered without a write.`,
  ],
});
