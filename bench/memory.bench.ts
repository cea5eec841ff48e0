// Memory that follows the work: the server's RSS while 64 connections append
// continuously (each awaiting its reply, one session each) for 60 s and one subscriber to every
// transcript reads its notifications slowly, against a twin in the same run: one connection
// appending for as long, no subscriber. The target is absolute (≤ 150 MB peak); the twin says
// how much of the peak is the load's. Every run starts a fresh server, since the peak (VmHWM) is
// per process. Durability `write` (the Go package's and the busiest: the most appends, so the
// most garbage, per second); `sync` is measured the same way with BENCH_MEMORY_SYNC=1.
//
// Every transcript starts at PREFILL_BYTES, just under the 4 MiB compaction trigger, so each one
// compacts during the run whatever the machine's append rate (a quiet machine appends the 4 MiB
// in 60 s anyway; a loaded one would not): all 64 reach the trigger together, the worst case.
// The files are written directly (as reads.bench.ts does), then opened once by a server that
// stops cleanly, leaving the summaries that spare the measured server a scan of each file.
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { StateClient } from '../src/client/client.js';
import { QUICK } from './harness/config.js';
import type { SlowSubscriber } from './harness/feed-load.js';
import { LINE } from './harness/disk.js';
import { appendFor, appenders, slowSubscriber } from './harness/feed-load.js';
import type { RowSpec } from './harness/report.js';
import { emit, progress, Samples, toRows } from './harness/report.js';
import { connectClient } from './harness/rpc.js';
import type { Durability } from './harness/servers.js';
import { startServer } from './harness/servers.js';
import { benchDirs } from './harness/temp-dir.js';

const BENCH = 'memory';
const CONNECTIONS = 64;
/** The target's 60 s; a quick run only smoke-tests the path. */
const SECONDS = QUICK ? 5 : 60;
/**
 * Each run lasts SECONDS, so the usual 1 + 5 repetitions would not fit run.ts's 360 s per bench:
 * two repetitions (one per order) of both sides, 4 minutes in all.
 */
const REPS = QUICK ? 1 : 2;
/** The subscriber's read rate: ~800 notifications/s, far below what 64 appenders make. */
const SUBSCRIBER_BYTES_PER_SECOND = 256 * 1024;
/** How often RSS is sampled while the load runs (VmHWM catches what falls between samples). */
const SAMPLE_MS = 250;
/** Each transcript's size when the load starts: 0.5 MiB (~2 600 appends) under the trigger; 50 KiB in a quick run. */
const PREFILL_BYTES = QUICK ? 4 * 1024 * 1024 - 50 * 1024 : 3.5 * 1024 * 1024;
const DURABILITY: Durability = process.env.BENCH_MEMORY_SYNC === '1' ? 'sync' : 'write';

type Side = 'load' | 'one';
const { dir } = benchDirs(BENCH);
let run = 0;
const notes: string[] = [];

interface RunResult {
  peakMB: number;
  endMB: number;
  startMB: number;
  /** Largest VmRSS sampled in the second half of the run (the steady state, past the start). */
  lateMB: number;
  /** Largest RssAnon and RssFile sampled during the run: the process's own memory, and mapped files' pages. */
  anonMB: number;
  fileMB: number;
  rate: number;
}

/** A state dir with `names` as sessions, each transcript PREFILL_BYTES, summaries left by a clean stop. */
async function prepare(name: string, names: readonly string[]): Promise<{ state: string; socket: string }> {
  const state = path.join(dir, `${name}/state.json`);
  const socket = path.join(dir, `${name}.sock`);
  const setup = await startServer(`${name}-setup`, state, socket, DURABILITY);
  const admin = await connectClient(socket);
  for (const n of names) await admin.sessionAdd({ session: { name: n } });
  await admin.close();
  await setup.stop();
  const body = Buffer.concat(Array.from({ length: Math.floor(PREFILL_BYTES / LINE.length) }, () => LINE));
  mkdirSync(path.join(dir, name, 'transcripts'), { recursive: true });
  for (const n of names) {
    const fd = openSync(path.join(dir, name, `transcripts/${n}.jsonl`), 'wx');
    try {
      writeSync(fd, body);
    } finally {
      closeSync(fd);
    }
  }
  // One scan per file, one file at a time, then the clean stop that writes the summaries.
  const scan = await startServer(`${name}-scan`, state, socket, DURABILITY);
  const c = await connectClient(socket);
  for (const n of names) await c.transcriptUsage({ name: n });
  await c.close();
  await scan.stop();
  return { state, socket };
}

async function measure(side: Side): Promise<RunResult> {
  const name = `${side}-${++run}`;
  const names = Array.from({ length: side === 'load' ? CONNECTIONS : 1 }, (_, i) => `s${i}`);
  const { state, socket } = await prepare(name, names);
  const server = await startServer(name, state, socket, DURABILITY);
  let clients: StateClient[] = [];
  let subscriber: SlowSubscriber | undefined;
  let sampler: NodeJS.Timeout | undefined;
  try {
    clients = await appenders(server.socket, names.length);
    if (side === 'load') subscriber = await slowSubscriber(server.socket, SUBSCRIBER_BYTES_PER_SECOND);
    const startMB = server.memory().rssMB;
    const t0 = Date.now();
    let lateMB = 0;
    let anonMB = 0;
    let fileMB = 0;
    sampler = setInterval(() => {
      const m = server.memory();
      anonMB = Math.max(anonMB, m.anonMB);
      fileMB = Math.max(fileMB, m.fileMB);
      if (Date.now() - t0 >= (SECONDS * 1000) / 2) lateMB = Math.max(lateMB, m.rssMB);
    }, SAMPLE_MS);
    const count = await appendFor(clients, names, SECONDS * 1000);
    const rate = count / ((Date.now() - t0) / 1000);
    clearInterval(sampler);
    const { rssMB, hwmMB, anonMB: endAnon, fileMB: endFile } = server.memory();
    if (subscriber) {
      if (subscriber.notifications === 0) throw new Error('the slow subscriber read no notification');
      notes.push(`${name}: ${count} appends; the subscriber read ${subscriber.notifications} notifications (${(subscriber.bytes / 1048576).toFixed(1)} MiB), ${subscriber.overflows} watch/overflow.`);
    } else notes.push(`${name}: ${count} appends.`);
    return { peakMB: hwmMB, endMB: rssMB, startMB, lateMB: Math.max(lateMB, rssMB), anonMB: Math.max(anonMB, endAnon), fileMB: Math.max(fileMB, endFile), rate };
  } finally {
    clearInterval(sampler);
    subscriber?.close();
    for (const c of clients) await c.close();
    await server.stop();
  }
}

const samples = new Samples();
for (let rep = 0; rep < REPS; rep++) {
  const sides: Side[] = rep % 2 === 0 ? ['load', 'one'] : ['one', 'load'];
  for (const side of sides) {
    const r = await measure(side);
    samples.add(`${side}.peak`, r.peakMB);
    samples.add(`${side}.end`, r.endMB);
    samples.add(`${side}.late`, r.lateMB);
    samples.add(`${side}.start`, r.startMB);
    samples.add(`${side}.rate`, r.rate);
    samples.add(`${side}.anon`, r.anonMB);
    samples.add(`${side}.file`, r.fileMB);
    progress(BENCH, `rep ${rep + 1}/${REPS} ${side}: peak ${r.peakMB.toFixed(0)} MB, second half max ${r.lateMB.toFixed(0)} MB, end ${r.endMB.toFixed(0)} MB, start ${r.startMB.toFixed(0)} MB (largest anon ${r.anonMB.toFixed(0)} MB, file ${r.fileMB.toFixed(0)} MB), ${r.rate.toFixed(0)} appends/s`);
  }
}

const LOAD = `${CONNECTIONS} conns appending ${SECONDS} s (${DURABILITY}), 1 subscriber reading ${SUBSCRIBER_BYTES_PER_SECOND / 1024} KiB/s`;
const TWIN = `1 conn appending ${SECONDS} s, no subscriber`;
const specs: RowSpec[] = [
  { id: 'server.rss.load', measurement: `server peak RSS, ${LOAD}`, unit: 'MB', ours: 'load.peak', ceiling: 'one.peak', ceilingLabel: TWIN },
  { id: 'server.rss.load.late', measurement: `server RSS, largest in the second half, ${LOAD}`, unit: 'MB', ours: 'load.late', ceiling: 'one.late', ceilingLabel: TWIN },
  { id: 'server.rss.load.appends', measurement: `append rate, ${LOAD}`, unit: 'req/s', ours: 'load.rate', ceiling: 'one.rate', ceilingLabel: TWIN },
  { id: 'server.rss.load.anon', measurement: `server RssAnon (its own memory), largest sampled, ${LOAD}`, unit: 'MB', ours: 'load.anon', ceiling: 'one.anon', ceilingLabel: TWIN },
  { id: 'server.rss.load.file', measurement: `server RssFile (mapped files: node's binary), largest sampled, ${LOAD}`, unit: 'MB', ours: 'load.file', ceiling: 'one.file', ceilingLabel: TWIN },
];
progress(BENCH, 'done');
emit({
  bench: BENCH,
  rows: toRows(samples, specs),
  // The memory table row is about a server after an ordinary run; these peaks are this bench's rows.
  memory: [],
  notes: [
    `every transcript starts at ${(PREFILL_BYTES / 1048576).toFixed(1)} MiB, so each compacts during the run (all ${CONNECTIONS} together on the load side).`,
    `every run starts a fresh server; peak = VmHWM from /proc at the end of the load, RSS sampled every ${SAMPLE_MS} ms. ${REPS} repetitions, sides alternating.`,
    ...notes,
  ],
});
