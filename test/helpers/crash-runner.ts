// The crash test: clients write as fast as they can while the server is killed with SIGKILL at
// random moments, then restarted; after every kill the files must hold every acknowledged write,
// nothing never sent, no torn line in the middle of a transcript, and a state.json that parses.
// `npm run crash-test` runs the long form; test/e2e/crash.test.ts a short one. Rounds with big
// entries (`bigEvery`) compact all the time, so kills land inside compactions and the checkpoints
// before them; there, entries compaction removed are not expected in the file, and every
// acknowledged seq must stay unique per session (seq never goes back).
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StateClient } from '../../src/client/client.js';
import { connect } from '../../src/client/client.js';

const CLI = process.env.HERRSCHER_STATE_CLI ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/src/cli.js');

/** Resolves once `child` has exited, also when it already had. */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

export interface CrashOptions {
  dir: string;
  kills: number;
  clients?: number;
  sessions?: number;
  durability?: 'sync' | 'write';
  /** Called after each verified round (progress for the long form). */
  onRound?: (round: number, acked: number) => void;
  /** A seeded random source keeps failures reproducible. */
  seed?: number;
  /** Every Nth round appends ~256 KiB entries (compaction under load); 0 or absent: never. */
  bigEvery?: number;
  /**
   * The test's signal: when it aborts (the test timed out or failed), the server is killed and the
   * run stops, so no server outlives its test and keeps the test process up.
   */
  signal?: AbortSignal;
}

export interface CrashReport {
  kills: number;
  ackedAppends: number;
  ackedParticipants: number;
  ackedMutations: number;
  /** Kills after which a compaction's temp file was left: the kill landed inside a compaction. */
  killsInCompaction: number;
  /** Kills sent just after a transcript passed the compaction trigger (big rounds). */
  killsAimedAtCompaction: number;
  problems: string[];
}

/** Mulberry32: small, seedable, good enough to pick kill moments. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Ledger {
  /** text → session, for every append sent; `acked` for those answered. */
  sent: Map<string, string>;
  acked: Set<string>;
  participantsSent: Map<string, string>;
  participantsAcked: Set<string>;
  /** Per session: tokens sent in order, and the index of the last acknowledged one. */
  tokens: Map<string, string[]>;
  lastAckedToken: Map<string, number>;
  /** Per session: acknowledged seq → text (a seq answered twice is a problem). */
  seqs: Map<string, Map<number, string>>;
}

const BIG = 256 * 1024;
/** The ledger key of a line's text: big entries pad it after a ":". */
const keyOf = (text: string): string => text.split(':', 1)[0] as string;

/** Every server child not yet exited, so a run that ends in any way kills what it started. */
type Live = Set<ChildProcess>;

async function startServer(state: string, socket: string, durability: string, live: Live): Promise<ChildProcess> {
  const child = spawn(process.execPath, [CLI, 'serve', '--state', state, '--socket', socket, '--durability', durability, '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode} at start: ${stderr}`);
    if (existsSync(socket)) {
      try {
        const c = await connect({ socket, timeoutMs: 200 });
        await c.close();
        return child;
      } catch {
        // not accepting yet
      }
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  child.kill('SIGKILL');
  throw new Error(`server did not start: ${stderr}`);
}

/** One client's load until `stop` resolves: appends, participants and a token per round trip. */
async function load(client: StateClient, k: number, round: number, names: string[], ledger: Ledger, stopped: () => boolean, big: boolean, problems: string[]): Promise<void> {
  const inFlight = new Set<Promise<unknown>>();
  let failed = false; // the server died under us: stop sending (a dead connection rejects at once)
  const track = (p: Promise<unknown>): void => {
    inFlight.add(p);
    void p.catch(() => (failed = true)).finally(() => inFlight.delete(p));
  };
  for (let i = 0; !stopped() && !failed; i++) {
    const name = names[(k + i) % names.length] as string;
    const text = `c${k}-r${round}-${i}`;
    ledger.sent.set(text, name);
    const body = big ? `${text}:`.padEnd(BIG, 'x') : text;
    const a = client.transcriptAppend({ name, entry: { ts: '2026-07-26T00:00:00Z', role: 'user', text: body, cost: 0.001, tokens_in: 1 } })
      .then(({ seq }) => {
        ledger.acked.add(text);
        const seqs = ledger.seqs.get(name) as Map<number, string>;
        const other = seqs.get(seq);
        if (other !== undefined) problems.push(`round ${round}: seq ${seq} of ${name} answered for ${text}, already for ${other}`);
        seqs.set(seq, text);
      });
    track(a);
    if (i % 4 === 0) {
      const id = `u${k}-r${round}-${i}`;
      ledger.participantsSent.set(id, name);
      track(client.participantsAppend({ name, userId: id }).then(() => ledger.participantsAcked.add(id)));
    }
    if (i % 8 === 0 && k < names.length) {
      // Each session's token has one writer (client k owns session k), so "the last acknowledged" is well defined.
      const own = names[k] as string;
      const list = ledger.tokens.get(own) as string[];
      const idx = list.push(`tok-${k}-r${round}-${i}`) - 1;
      track(client.sessionSetResumeToken({ name: own, resumeToken: list[idx] as string }).then(() => {
        if ((ledger.lastAckedToken.get(own) ?? -1) < idx) ledger.lastAckedToken.set(own, idx);
      }));
    }
    if (inFlight.size >= 16) await Promise.race(inFlight).catch(() => undefined);
  }
  await Promise.allSettled(inFlight);
}

function verify(dir: string, names: string[], ledger: Ledger, problems: string[], round: number): void {
  const where = `after kill ${round}`;
  let state: { sessions?: { name: string; resumeToken?: string }[] };
  try {
    state = JSON.parse(readFileSync(path.join(dir, 'state.json'), 'utf8')) as typeof state;
  } catch (err) {
    problems.push(`${where}: state.json does not parse: ${(err as Error).message}`);
    return;
  }
  const seen = new Set<string>();
  for (const name of names) {
    const file = path.join(dir, 'transcripts', `${name}.jsonl`);
    const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [''];
    const last = lines.pop() as string; // '' when the file ends with "\n"; else a torn tail
    if (last !== '') {
      try {
        JSON.parse(last);
      } catch {
        // a torn last line is allowed: it is repaired before the next append
      }
    }
    const first = firstSeqOf(dir, name);
    const seqOf = new Map([...(ledger.seqs.get(name) ?? new Map<number, string>())].map(([seq, t]) => [t, seq]));
    let entry = 0;
    for (const [i, line] of lines.entries()) {
      let text: string;
      try {
        text = keyOf((JSON.parse(line) as { text: string }).text);
      } catch {
        problems.push(`${where}: ${name}.jsonl line ${i + 1} is torn: ${line.slice(0, 80)}`);
        continue;
      }
      if (ledger.sent.get(text) !== name) problems.push(`${where}: ${name}.jsonl holds ${text}, never sent to it`);
      if (seen.has(text)) problems.push(`${where}: ${text} appears twice`);
      seen.add(text);
      // The seq each append was answered with is its place in the transcript, across compactions.
      const seq = seqOf.get(text);
      if (seq !== undefined && seq !== first + entry) problems.push(`${where}: ${text} was answered seq ${seq}, but is entry ${first + entry} of ${name}`);
      entry++;
    }
    const row = state.sessions?.find((s) => s.name === name);
    const tokens = ledger.tokens.get(name) as string[];
    const acked = ledger.lastAckedToken.get(name) ?? -1;
    const onDisk = row?.resumeToken ? tokens.indexOf(row.resumeToken) : -1;
    if (acked >= 0 && onDisk < acked) {
      problems.push(`${where}: ${name} resumeToken is ${row?.resumeToken ?? '(none)'}, older than acknowledged ${tokens[acked]}`);
    }
  }
  // Compaction drops the oldest entries: an acknowledged one is expected in the file when its seq
  // is at or above the seq of the file's first line (from the store's side file).
  for (const [name, seqs] of ledger.seqs) {
    const first = firstSeqOf(dir, name);
    for (const [seq, text] of seqs) {
      if (seq >= first && !seen.has(text)) problems.push(`${where}: acknowledged append ${text} (seq ${seq} of ${name}) is missing`);
    }
  }
  const journal = new Set<string>();
  for (const name of names) {
    const file = path.join(dir, 'participants', `${name}.log`);
    if (!existsSync(file)) continue;
    for (const id of readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
      if (ledger.participantsSent.get(id) === undefined) problems.push(`${where}: ${name}.log holds ${id}, never sent`);
      journal.add(id);
    }
  }
  for (const id of ledger.participantsAcked) if (!journal.has(id)) problems.push(`${where}: acknowledged participant ${id} is missing`);
}

const COMPACT_TRIGGER_BYTES = 4 * 1024 * 1024;

/**
 * The seq of the first line of `name`'s transcript, from the store's side file (either copy, with
 * or without its checksum prefix) for the file's inode; 0 when it was never compacted.
 */
function firstSeqOf(dir: string, name: string): number {
  const file = path.join(dir, 'transcripts', `${name}.jsonl`);
  if (!existsSync(file)) return 0;
  const ino = statSync(file).ino;
  const meta = path.join(dir, '.herrscher-state', 'transcripts', `${name}.json`);
  for (const f of [meta, `${meta}.copy`]) {
    if (!existsSync(f)) continue;
    const text = readFileSync(f, 'utf8');
    try {
      const m = JSON.parse(/^[0-9a-f]{8} /.test(text) ? text.slice(9) : text) as { ino: number; firstSeq: number; prev?: { ino: number; firstSeq: number } };
      if (m.ino === ino) return m.firstSeq;
      if (m.prev?.ino === ino) return m.prev.firstSeq;
    } catch {
      // a damaged copy: the other one may do
    }
  }
  return 0;
}

/** Polls until some transcript is past the compaction trigger (true), or `ms` passed (false). */
async function passesTrigger(dir: string, names: string[], ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    for (const n of names) {
      const file = path.join(dir, 'transcripts', `${n}.jsonl`);
      if (existsSync(file) && statSync(file).size > COMPACT_TRIGGER_BYTES) return true;
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  return false;
}

export async function runCrashTest(o: CrashOptions): Promise<CrashReport> {
  const live: Live = new Set();
  const killAll = (): void => {
    for (const child of live) child.kill('SIGKILL');
  };
  o.signal?.addEventListener('abort', killAll, { once: true });
  try {
    return await crashRounds(o, live);
  } finally {
    // Whatever ended the run (a thrown error, an abort, the normal end): no server outlives it.
    o.signal?.removeEventListener('abort', killAll);
    const left = [...live];
    killAll();
    await Promise.all(left.map(exited));
  }
}

async function crashRounds(o: CrashOptions, live: Live): Promise<CrashReport> {
  const random = rng(o.seed ?? 1);
  const state = path.join(o.dir, 'state.json');
  const socket = path.join(o.dir, 's.sock');
  const names = Array.from({ length: o.sessions ?? 4 }, (_, i) => `s${i}`);
  const ledger: Ledger = {
    sent: new Map(), acked: new Set(), participantsSent: new Map(), participantsAcked: new Set(),
    tokens: new Map(names.map((n) => [n, []])), lastAckedToken: new Map(), seqs: new Map(names.map((n) => [n, new Map()])),
  };
  let killsInCompaction = 0;
  let killsAimedAtCompaction = 0;
  const problems: string[] = [];
  const durability = o.durability ?? 'sync';

  let server = await startServer(state, socket, durability, live);
  const admin = await connect({ socket });
  for (const name of names) await admin.sessionAdd({ session: { name, type: 'text', cmd: 'claude' } });
  await admin.close();

  for (let round = 1; round <= o.kills; round++) {
    if (o.signal?.aborted) throw new Error(`crash test aborted before kill ${round}`);
    const clients = await Promise.all(Array.from({ length: o.clients ?? 4 }, () => connect({ socket })));
    let stop = false;
    const big = (o.bigEvery ?? 0) > 0 && round % (o.bigEvery as number) === 0;
    const loads = clients.map((c, k) => load(c, k, round, names, ledger, () => stop, big, problems).catch(() => undefined));
    if (big) {
      // Aim at compaction: once a transcript passes the 4 MiB trigger, the log's checkpoint and
      // the compaction run; kill a few ms later, inside one or the other.
      if (await passesTrigger(o.dir, names, 3000)) killsAimedAtCompaction++;
      await new Promise((r) => setTimeout(r, random() * 15));
    } else {
      // After a big round the first appends wait for a scan and a compaction of the big files: let
      // one be answered first (at most 3 s), so every round makes progress under a loaded machine.
      const acked = ledger.acked.size;
      for (const until = Date.now() + 3000; ledger.acked.size === acked && Date.now() < until;) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 20 + random() * 250));
    }
    if (server.exitCode !== null) problems.push(`kill ${round}: the server had already exited (${server.exitCode}) under load`);
    server.kill('SIGKILL');
    await exited(server);
    stop = true;
    await Promise.allSettled(loads);
    await Promise.allSettled(clients.map((c) => c.close()));
    if (existsSync(path.join(o.dir, 'transcripts')) && readdirSync(path.join(o.dir, 'transcripts')).some((f) => f.endsWith('.compact'))) killsInCompaction++;
    verify(o.dir, names, ledger, problems, round);
    try {
      server = await startServer(state, socket, durability, live);
    } catch (err) {
      problems.push(`restart after kill ${round}: ${(err as Error).message}`);
      break;
    }
    o.onRound?.(round, ledger.acked.size);
    if (problems.length > 20) break;
  }
  server.kill('SIGTERM');
  await exited(server);
  verify(o.dir, names, ledger, problems, o.kills);
  return {
    kills: o.kills,
    ackedAppends: ledger.acked.size,
    ackedParticipants: ledger.participantsAcked.size,
    ackedMutations: [...ledger.lastAckedToken.values()].length,
    killsInCompaction,
    killsAimedAtCompaction,
    problems,
  };
}
