// 8 clients on one socket, half speaking LSP framing and half NDJSON, each pipelining appends to
// one transcript and one participants journal: every write lands exactly once and each client's
// own order survives the interleaving. The clients run the BUILT typed client, as editor
// extensions import it, two connections (one per framing) in each of 4 processes, so writes also
// arrive from separate processes at once; the server runs in this process.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from '../helpers/cli.js';
import { closeClean, startServer } from '../helpers/server.js';

const FIXTURE = path.join(REPO, 'test/fixtures/append-client.mjs');
const CLIENTS = 8;
/** Clients per process: one LSP, one NDJSON. */
const PER_PROCESS = 2;
const N = 200;
const NAME = 'crowd';

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Checks that `items` holds each `<prefix><k>-<i>` exactly once and, per k, in increasing i. */
function assertEachOnceInClientOrder(items: string[], prefix: string, what: string): void {
  assert.equal(items.length, CLIENTS * N, `${what}: number of lines`);
  assert.equal(new Set(items).size, items.length, `${what}: no line twice`);
  const seen = new Map<number, number>();
  for (const item of items) {
    const m = new RegExp(`^${prefix}(\\d+)-(\\d+)$`).exec(item);
    assert.ok(m, `${what}: unexpected line ${JSON.stringify(item)}`);
    const k = Number(m[1]);
    const i = Number(m[2]);
    assert.equal(i, seen.get(k) ?? 0, `${what}: client ${k}'s writes out of order at ${JSON.stringify(item)}`);
    seen.set(k, i + 1);
  }
  assert.deepEqual(
    [...seen.entries()].sort((a, b) => a[0] - b[0]),
    Array.from({ length: CLIENTS }, (_, k) => [k, N]),
    `${what}: every client's ${N} writes`,
  );
}

test('8 clients with mixed framings append to one session: each write once, each client in order', { timeout: 60_000 }, async (t) => {
  const server = await startServer(t);
  const { dir, socket } = server;
  const admin = await server.raw('ndjson');
  assert.equal((await admin.request('session/add', { session: { name: NAME } })).error, undefined);

  const runs = Array.from({ length: CLIENTS / PER_PROCESS }, (_, p) => {
    const clients = Array.from({ length: PER_PROCESS }, (_c, j) => p * PER_PROCESS + j).map((k) => `${k}:${k % 2 === 0 ? 'lsp' : 'ndjson'}`);
    const child = spawn(process.execPath, [FIXTURE, socket, String(N), NAME, ...clients], { stdio: ['ignore', 'pipe', 'pipe'] });
    t.after(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    return new Promise<Outcome>((resolve) =>
      child.once('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() })),
    );
  });
  const outcomes = await Promise.all(runs);
  const seqOf = new Map<string, number>();
  const reports: { k: number; framing: string; replies: number; added: number; seqs: number[] }[] = [];
  for (const [p, o] of outcomes.entries()) {
    assert.equal(o.code, 0, `process ${p} failed:\n${o.stderr}`);
    reports.push(...o.stdout.trim().split('\n').map((l) => JSON.parse(l) as (typeof reports)[number]));
  }
  reports.sort((a, b) => a.k - b.k);
  assert.deepEqual(reports.map((r) => r.k), Array.from({ length: CLIENTS }, (_, k) => k), 'a report from every client');
  for (const [k, report] of reports.entries()) {
    assert.deepEqual({ ...report, seqs: report.seqs.length }, { k, framing: k % 2 === 0 ? 'lsp' : 'ndjson', replies: 2 * N, added: N, seqs: N }, `client ${k}'s replies`);
    for (const [i, seq] of report.seqs.entries()) seqOf.set(`c${k}-${i}`, seq);
  }

  // A reply means the write reached the file: no need to stop the server before reading.
  const transcript = readFileSync(path.join(dir, `transcripts/${NAME}.jsonl`), 'utf8');
  assert.ok(transcript.endsWith('\n'), 'the transcript ends with a newline');
  const texts = transcript
    .slice(0, -1)
    .split('\n')
    .map((line) => {
      const entry = JSON.parse(line) as { ts: string; role: string; text: string };
      assert.deepEqual(Object.keys(entry), ['ts', 'role', 'text'], `keys of ${line}`);
      return entry.text;
    });
  assertEachOnceInClientOrder(texts, 'c', 'transcript');
  for (const [index, text] of texts.entries()) assert.equal(seqOf.get(text), index, `the seq answered for ${text} is its line number`);

  const journal = readFileSync(path.join(dir, `participants/${NAME}.log`), 'utf8');
  assert.ok(journal.endsWith('\n'), 'the journal ends with a newline');
  assertEachOnceInClientOrder(journal.slice(0, -1).split('\n'), 'p', 'participants');

  // The server's own view agrees with the files.
  const read = await admin.call('transcript/read', { name: NAME });
  assert.deepEqual((read as { entries: { text: string }[] }).entries.map((e) => e.text), texts);
  assert.deepEqual(await admin.call('participants/read', { name: NAME }), { userIds: journal.slice(0, -1).split('\n') });

  await closeClean(server);
});
