// Does a state.json mutation cost the change or the whole document? Durable
// session/setResumeToken from 32 connections on a server holding 10 sessions and on one holding
// 5 000, measured back to back in each repetition; the row's ratio is the rate at 5 000 over the
// rate at 10. The same two servers then take appends to 10 transcripts: an append finds its
// session row by name, which must not cost more with more rows. Beside them, the disk's own
// ratio: this process replacing a copy of each server's state.json as a durable commit does
// (temp file, fsync, rename, fsync of the folder), one after the other. While every group commit
// replaces state.json whole, the servers' ratio cannot pass the disk's.
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { ENTRY, RATE } from './harness/config.js';
import type { Call } from './harness/load.js';
import { eachAwaiting, prime } from './harness/load.js';
import type { RowSpec } from './harness/report.js';
import { emit, progress, repeat, toRows } from './harness/report.js';
import type { Rpc } from './harness/rpc.js';
import { connectClient, connectRpc } from './harness/rpc.js';
import type { SocketProc } from './harness/servers.js';
import { startServer } from './harness/servers.js';
import { benchDirs } from './harness/temp-dir.js';

const BENCH = 'mutations';
const CONNECTIONS = 32;
const SMALL = 10;
const BIG = 5000;

const { dir } = benchDirs(BENCH);

interface Side {
  server: SocketProc;
  conns: Rpc[];
  calls: Call[];
  /** Connection k appends to the k mod 10-th of the last 10 sessions (the end of the rows). */
  appends: Call[];
  startRssMB: number;
  /** Replaces a copy of the server's state.json once, durably, in this process. */
  replaceCopy: () => void;
}

/** A copy of `file` in its own folder, and a durable whole-file replace of it (what a commit's write costs the disk). */
function copyReplacer(file: string, name: string): () => void {
  const bytes = readFileSync(file);
  const folder = path.join(dir, `raw-${name}`);
  mkdirSync(folder, { recursive: true });
  const target = path.join(folder, 'state.json');
  return () => {
    writeFileAtomic.sync(target, bytes, { mode: 0o600, fsync: true });
    const fd = openSync(folder, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  };
}

/** Durable replaces per second, one after the other, for as long as a rate is measured. */
function replaceRate(replace: () => void): number {
  const start = performance.now();
  let n = 0;
  while (n < RATE.maxCount && performance.now() - start < RATE.maxMs) {
    replace();
    n++;
  }
  return n / ((performance.now() - start) / 1000);
}

let token = 0;

/** A server with `count` sessions as a bridge creates them, and 32 connections setting tokens. */
async function side(count: number): Promise<Side> {
  const name = `mutations-${count}`;
  const stateFile = path.join(dir, `${name}/state.json`);
  const server = await startServer(name, stateFile, path.join(dir, `${name}.sock`), 'sync');
  const admin = await connectClient(server.socket);
  // Added 500 at a time: they share group commits, so setting up 5 000 takes seconds, not minutes.
  for (let from = 0; from < count; from += 500) {
    const adds = [];
    for (let k = from; k < Math.min(count, from + 500); k++) {
      const s = `s${k}`;
      adds.push(admin.sessionAdd({ session: { name: s, channelID: `1${String(k).padStart(17, '0')}`, type: 'text', cmd: 'claude --dangerously-skip-permissions', vendor: 'claude', dir: `/home/user/src/project-${s}` } }));
    }
    await Promise.all(adds);
  }
  await admin.close();
  const startRssMB = server.memory().rssMB;
  const conns = await Promise.all(Array.from({ length: CONNECTIONS }, () => connectRpc(server.socket)));
  // Connection k sets the token of session k mod count, a new UUID-sized token every call.
  const calls: Call[] = conns.map((rpc, k) => () =>
    rpc.request('session/setResumeToken', { name: `s${k % count}`, resumeToken: `3f0c2a9e-0b1d-4c8e-9f7a-${String(++token).padStart(12, '0')}` }),
  );
  const appends: Call[] = conns.map((rpc, k) => () =>
    rpc.request('transcript/append', { name: `s${count - 1 - (k % 10)}`, entry: ENTRY }),
  );
  return { server, conns, calls, appends, startRssMB, replaceCopy: copyReplacer(stateFile, name) };
}

progress(BENCH, `setting up ${SMALL} and ${BIG} sessions`);
const small = await side(SMALL);
const big = await side(BIG);

const samples = await repeat(BENCH, [
  {
    name: `setResumeToken, ${CONNECTIONS} connections, ${SMALL} sessions`,
    run: async (record) => {
      await prime(small.calls);
      record('small.rate', (await eachAwaiting(small.calls, RATE)).rate);
    },
  },
  {
    name: `setResumeToken, ${CONNECTIONS} connections, ${BIG} sessions`,
    run: async (record) => {
      await prime(big.calls);
      record('big.rate', (await eachAwaiting(big.calls, RATE)).rate);
    },
  },
  {
    name: `the disk: durable replaces of the ${SMALL}-session state.json`,
    run: async (record) => record('small.replace.rate', replaceRate(small.replaceCopy)),
  },
  {
    name: `the disk: durable replaces of the ${BIG}-session state.json`,
    run: async (record) => record('big.replace.rate', replaceRate(big.replaceCopy)),
  },
  {
    name: `transcript/append, ${CONNECTIONS} connections on 10 transcripts, ${SMALL} sessions`,
    run: async (record) => {
      await prime(small.appends);
      record('small.append.rate', (await eachAwaiting(small.appends, RATE)).rate);
    },
  },
  {
    name: `transcript/append, ${CONNECTIONS} connections on 10 transcripts, ${BIG} sessions`,
    run: async (record) => {
      await prime(big.appends);
      record('big.append.rate', (await eachAwaiting(big.appends, RATE)).rate);
    },
  },
]);

const specs: RowSpec[] = [
  { id: 'session.setResumeToken.5000-sessions', measurement: `session/setResumeToken (sync), ${CONNECTIONS} conns, ${BIG} sessions`, unit: 'req/s', ours: 'big.rate', ceiling: 'small.rate', ceilingLabel: `the same with ${SMALL} sessions` },
  { id: 'state.replace.5000-sessions.disk', measurement: `the disk alone: durable whole-file replaces of the ${BIG}-session state.json, one at a time`, unit: 'ops/s', ours: 'big.replace.rate', ceiling: 'small.replace.rate', ceilingLabel: `the same with the ${SMALL}-session file (the bound of the row above)` },
  { id: 'transcript.append.5000-sessions', measurement: `transcript/append (sync), ${CONNECTIONS} conns on 10 transcripts, ${BIG} sessions`, unit: 'req/s', ours: 'big.append.rate', ceiling: 'small.append.rate', ceilingLabel: `the same with ${SMALL} sessions` },
];

const memory = [small, big].map((s) => ({ server: s.server.name, ...s.server.memory(), startRssMB: s.startRssMB }));
progress(BENCH, 'stopping');
for (const s of [small, big]) {
  await Promise.all(s.conns.map((c) => c.close()));
  await s.server.stop();
}

emit({
  bench: BENCH,
  rows: toRows(samples, specs),
  memory,
  notes: [
    `${CONNECTIONS} connections each await their own session/setResumeToken (a new token every call) on a durable server with ${SMALL} and with ${BIG} sessions (rows as a bridge creates them); the ratio is the rate at ${BIG} over the rate at ${SMALL}, per repetition.`,
    `The disk's ratio: this process replaces a copy of each server's state.json as a durable commit does (write-file-atomic with fsync, then an fsync of the folder), one after the other; while each group commit replaces state.json whole, the setResumeToken ratio cannot pass it.`,
    `Then the same connections append (durable) to 10 transcripts on each server, the last 10 sessions of its rows; 6 repetitions append at most ~2 MB to each, below the 4 MiB compaction trigger.`,
  ],
});
