// state.json mutations under load: session/setResumeToken from 64 connections on 64 sessions,
// each awaiting its own call, against one durable state.json rewrite per call (temp file, fsync,
// rename, directory fsync) of the same document, in-process. The ratio says how much the server's
// coalescing of mutations into shared commits buys.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { RATE } from './harness/config.js';
import { durableRewriteRate } from './harness/disk.js';
import type { Call } from './harness/load.js';
import { eachAwaiting, prime } from './harness/load.js';
import type { RowSpec } from './harness/report.js';
import { emit, progress, repeat, toRows } from './harness/report.js';
import type { Rpc } from './harness/rpc.js';
import { connectClient, connectRpc } from './harness/rpc.js';
import { startServer } from './harness/servers.js';
import { benchDirs } from './harness/temp-dir.js';

const BENCH = 'resume-token';
const CONNECTIONS = 64;

const { dir, rawDir } = benchDirs(BENCH);
const state = path.join(dir, 'sync/state.json');

const server = await startServer('resume-token-sync', state, path.join(dir, 'sync.sock'), 'sync');
const names = Array.from({ length: CONNECTIONS }, (_, i) => `s${i}`);
const admin = await connectClient(server.socket);
// Rows as a bridge creates them, so the document has a realistic size per session.
for (const [k, name] of names.entries()) {
  await admin.sessionAdd({ session: { name, channelID: `1${String(k).padStart(17, '0')}`, type: 'text', cmd: 'claude --dangerously-skip-permissions', vendor: 'claude', dir: `/home/user/src/project-${name}` } });
}
await admin.close();
const startRssMB = server.memory().rssMB;
const conns: Rpc[] = await Promise.all(names.map(() => connectRpc(server.socket)));

let token = 0;
// Every call sets a new token (a UUID-sized string), so every call changes the document.
const calls: Call[] = conns.map((rpc, k) => () =>
  rpc.request('session/setResumeToken', { name: names[k], resumeToken: `3f0c2a9e-0b1d-4c8e-9f7a-${String(++token).padStart(12, '0')}` }),
);

const samples = await repeat(BENCH, [
  {
    name: `setResumeToken, ${CONNECTIONS} connections`,
    run: async (record) => {
      await prime(calls);
      record('ours.rate', (await eachAwaiting(calls, RATE)).rate);
    },
  },
  {
    name: 'one durable state.json rewrite per call',
    run: async (record) => {
      // The document as it is now: same size and content as what the server rewrites.
      const doc = readFileSync(state);
      record('rewrite.rate', (await durableRewriteRate(rawDir, doc, RATE)).rate);
      record('doc.bytes', doc.length);
    },
  },
]);

const specs: RowSpec[] = [
  { id: 'session.setResumeToken.conns', measurement: `session/setResumeToken (sync), ${CONNECTIONS} conns on ${CONNECTIONS} sessions`, unit: 'req/s', ours: 'ours.rate', ceiling: 'rewrite.rate', ceilingLabel: 'durable state.json rewrite per call' },
];

const memory = [{ server: server.name, ...server.memory(), startRssMB }];
const docBytes = samples.get('doc.bytes');
progress(BENCH, 'stopping');
await Promise.all(conns.map((c) => c.close()));
await server.stop();

emit({
  bench: BENCH,
  rows: toRows(samples, specs),
  memory,
  notes: [
    `setResumeToken: each connection awaits its own call; every call sets a new token. The rewrite ceiling writes the server's current state.json (${Math.min(...docBytes)}–${Math.max(...docBytes)} bytes) with temp file + fsync + rename + directory fsync, one caller.`,
  ],
});
