// Reads and journal appends must not slow down as files grow: transcript/last, transcript/usage
// and transcript/read on a 4 MiB transcript against a small one, and participants/append on a
// 10 000-id journal against a 10-id one. Each read pair returns the same number
// of entries from both files, so its ratio says whether reads are flat in the
// file size. The server caches a transcript after its first read, so every warm measurement
// follows one warm-up call; the cold first transcript/usage after a restart is reported apart, and
// so is the first session/infos of a host restart over 50 transcripts of each size.
import { closeSync, existsSync, mkdirSync, openSync, statSync, writeSync } from 'node:fs';
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
/** The small twin of read(200): enough entries that read(200) returns 200 from it too (~52 KB). */
const READ200_ENTRIES = 256;
const READ_LIMIT = 200;
/** Sessions per state dir of the session/infos restart pair. */
const INFOS_SESSIONS = QUICK ? 10 : 50;
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
for (const name of ['big', 'small', 'mid', 'pbig']) await client.sessionAdd({ session: { name } });
const appendEntry = (name: string) => () => client.transcriptAppend({ name, entry: ENTRY });
const entries = (bytes: number): number => Math.floor(bytes / LINE.length);
await window(appendEntry('big'), 256, { ...PREFILL, maxCount: entries(BIG_BYTES) });
await window(appendEntry('small'), 256, { ...PREFILL, maxCount: entries(SMALL_BYTES) });
await window(appendEntry('mid'), 256, { ...PREFILL, maxCount: READ200_ENTRIES });
let idSeq = 0;
await window(() => client.participantsAppend({ name: 'pbig', userId: `u${idSeq++}` }), 256, { ...PREFILL, maxCount: BIG_JOURNAL });
const sizes = {
  big: statSync(path.join(path.dirname(state), 'transcripts/big.jsonl')).size,
  small: statSync(path.join(path.dirname(state), 'transcripts/small.jsonl')).size,
  mid: statSync(path.join(path.dirname(state), 'transcripts/mid.jsonl')).size,
};
progress(BENCH, `prefilled: big ${sizes.big} bytes, small ${sizes.small} bytes, mid ${sizes.mid} bytes, ${BIG_JOURNAL} participants`);

// ---- the session/infos restart pair: two state dirs, INFOS_SESSIONS transcripts each ---------
// Made once per run: a server adds the sessions, the transcripts are written directly as the
// lines an append writes (Go's format; much faster than appending 200 MB through the server),
// then one server opens every transcript (session/infos, a scan) and stops cleanly, leaving the
// per-transcript summaries a restart checks instead of scanning (docs/durability.md).
const infosDirs = { big: path.join(dir, 'infos-big'), small: path.join(dir, 'infos-small') };
const infosState = (size: 'big' | 'small'): string => path.join(infosDirs[size], 'state/state.json');
const infosSocket = (size: 'big' | 'small'): string => path.join(infosDirs[size], 's.sock');
/** The first session/infos with no summaries yet (a scan of every transcript), once per run. */
const scanUs = { big: NaN, small: NaN };
const infosNames = Array.from({ length: INFOS_SESSIONS }, (_, i) => `s${i}`);
for (const size of ['big', 'small'] as const) {
  mkdirSync(infosDirs[size]);
  const s = await startServer(`infos-${size}-setup`, infosState(size), infosSocket(size), 'sync');
  const c = await connectClient(infosSocket(size));
  for (const name of infosNames) await c.sessionAdd({ session: { name } });
  await c.close();
  await s.stop();
  const lines = entries(size === 'big' ? BIG_BYTES : SMALL_BYTES);
  const body = Buffer.concat(Array.from({ length: lines }, () => LINE));
  mkdirSync(path.join(path.dirname(infosState(size)), 'transcripts'), { recursive: true });
  for (const name of infosNames) {
    const fd = openSync(path.join(path.dirname(infosState(size)), `transcripts/${name}.jsonl`), 'wx');
    try {
      writeSync(fd, body);
    } finally {
      closeSync(fd);
    }
  }
  const first = await startServer(`infos-${size}-summaries`, infosState(size), infosSocket(size), 'sync');
  const fc = await connectClient(infosSocket(size));
  const t0 = nowUs();
  const { sessions } = await fc.sessionInfos({});
  scanUs[size] = nowUs() - t0;
  const entriesSeen = sessions.reduce((n, i) => n + i.usage.entries, 0);
  if (entriesSeen !== lines * INFOS_SESSIONS) throw new Error(`infos-${size}: session/infos counted ${entriesSeen} entries, ${lines * INFOS_SESSIONS} were written`);
  await fc.close();
  await first.stop();
  const summaries = infosNames.filter((name) => existsSync(path.join(path.dirname(infosState(size)), `.herrscher-state/transcripts/${name}.summary`))).length;
  progress(BENCH, `infos-${size}: ${INFOS_SESSIONS} transcripts of ${body.length} bytes, first session/infos (scan) ${(scanUs[size] / 1000).toFixed(1)} ms, ${summaries} summaries after a clean stop`);
}

/** A clean restart of one infos state dir, timing its first session/infos and spawn-to-reply. */
async function infosRestart(size: 'big' | 'small', record: (key: string, value: number) => void): Promise<void> {
  const t0 = nowUs();
  const s = await startServer(`infos-${size}`, infosState(size), infosSocket(size), 'sync');
  const c = await connectClient(infosSocket(size));
  const t1 = nowUs();
  const { sessions } = await c.sessionInfos({});
  const t2 = nowUs();
  if (sessions.length !== INFOS_SESSIONS) throw new Error(`infos-${size}: ${sessions.length} sessions, expected ${INFOS_SESSIONS}`);
  record(`infos.cold.${size}`, t2 - t1);
  record(`infos.restart.${size}`, t2 - t0);
  await c.close();
  await s.stop();
}

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
/** The file each method's small side reads: read(200) needs one holding at least 200 entries. */
const smallName = (method: Read): string => (method === 'read' ? 'mid' : 'small');
const read = (method: Read, name: string) => (): Promise<unknown> => {
  switch (method) {
    case 'last':
      return client.transcriptLast({ name });
    case 'usage':
      return client.transcriptUsage({ name });
    case 'read':
      // 200 entries from both the 4 MiB file and the 256-entry one: the same reply.
      return client.transcriptRead({ name, limit: READ_LIMIT });
    case 'readSame':
      // As many entries as the 4 KiB transcript holds: the same reply from both files.
      return client.transcriptRead({ name, limit: entries(SMALL_BYTES) });
  }
};

// Each step alternates calls on the big and the small file, so both see the same load.
const steps: Step[] = [];
for (const method of ['last', 'usage', 'read', 'readSame'] as const) {
  steps.push({
    name: `transcript/${method}, 4 MiB and ${smallName(method)} alternating`,
    run: async (record) => {
      // The warm-up calls: the server caches a file after its first read.
      await read(method, 'big')();
      await read(method, smallName(method))();
      const [big, small] = await awaitEachAlternating(read(method, 'big'), read(method, smallName(method)), READ_LATENCY);
      record(`${method}.big`, big.p50);
      record(`${method}.small`, small.p50);
    },
  });
}
steps.push({
  name: `first session/infos after a clean restart, ${INFOS_SESSIONS} × 4 MiB and ${INFOS_SESSIONS} × 4 KiB`,
  run: async (record) => {
    await infosRestart('big', record);
    await infosRestart('small', record);
  },
});
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
  { id: 'transcript.read200', measurement: `transcript/read(${READ_LIMIT}) warm p50 (same reply), ${big}`, unit: 'µs', ours: 'read.big', ceiling: 'read.small', ceilingLabel: `${READ200_ENTRIES} entries (${Math.round(sizes.mid / 1024)} KiB)` },
  { id: 'transcript.read.same', measurement: `transcript/read(${entries(SMALL_BYTES)}) warm p50 (same reply), ${big}`, unit: 'µs', ours: 'readSame.big', ceiling: 'readSame.small', ceilingLabel: small },
  { id: 'transcript.usage.cold', measurement: `first transcript/usage after restart, ${big}`, unit: 'µs', ours: 'cold.usage.big', ceiling: 'cold.usage.small', ceilingLabel: small },
  { id: 'session.infos.cold', measurement: `first session/infos after a clean restart, ${INFOS_SESSIONS} × 4 MiB transcripts`, unit: 'µs', ours: 'infos.cold.big', ceiling: 'infos.cold.small', ceilingLabel: `${INFOS_SESSIONS} × 4 KiB` },
  { id: 'session.infos.restart', measurement: `spawn to first session/infos reply, ${INFOS_SESSIONS} × 4 MiB transcripts`, unit: 'µs', ours: 'infos.restart.big', ceiling: 'infos.restart.small', ceilingLabel: `${INFOS_SESSIONS} × 4 KiB` },
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
    `Transcripts: ${sizes.big}, ${sizes.small} and ${sizes.mid} bytes of ${LINE.length}-byte entries, filled through the server; every read pair returns the same entries from both sides: read(${READ_LIMIT}) from the 4 MiB and the ${READ200_ENTRIES}-entry file, read(${entries(SMALL_BYTES)}) from the 4 MiB and the 4 KiB file.`,
    `session/infos: two state dirs of ${INFOS_SESSIONS} sessions, each transcript written directly (${entries(BIG_BYTES)} or ${entries(SMALL_BYTES)} lines), opened once by a server that then stopped cleanly (leaving summaries; that first session/infos, a scan, took ${(scanUs.big / 1000).toFixed(0)} ms for 4 MiB and ${(scanUs.small / 1000).toFixed(0)} ms for 4 KiB, once); each repetition restarts each dir's server and times its first session/infos from a connected client, and spawn to that reply.`,
    'Warm: the server caches a transcript after its first read, so each warm measurement follows one warm-up call. Cold: the first transcript/usage after a server restart (one call per repetition).',
    `Each pair alternates its calls (big, small, small, big…) on one connection, so both sides see the same moment's load.`,
    `participants/append new id: ${NEW_IDS.maxCount / 2} new ids per journal and repetition, durable like every append; the 10-id journal is a fresh session each repetition. Present id: answered without a write.`,
  ],
});
