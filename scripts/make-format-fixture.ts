// Writes a state dir as a build of herrscher-state leaves it after a machine crash, for
// test/store/format-fixture.test.ts: every later build must put back every acknowledged write.
//
//   node --import tsx scripts/make-format-fixture.ts --checkout DIR --out DIR
//
// --checkout: the source tree whose store writes the dir (default: this one). To record the
// files of a release, check it out elsewhere (git worktree add /tmp/rel <tag>; npm ci there) and
// pass that folder; the script only calls Store.open, addSession, appendTranscript,
// appendParticipant and close, which every release has.
//
// What the dir holds, in order:
// 1. A clean run: sessions a and b; a gets entries past the 4 MiB compaction trigger (so its
//    meta and its copy, the high-water marks and, at close, the summaries are written).
// 2. A crashed run (the store is never closed, the process exits): more entries for a and b, a new
//    session c with its first entries, participants for a and c. Their records are in wal.log.
// 3. A power loss that kept the log but not the files' page cache: a.jsonl loses its last two
//    appends and keeps a torn half of the third-to-last; c.jsonl is cut to nothing;
//    participants/a.log loses its last id. b.jsonl keeps everything (replay must not double it).
// expected.json: every acknowledged write (with the seq each append was answered), and the inode
// each file had (a copy gets new ones; the test gives the old ones back through the io seam).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    checkout: { type: 'string', default: process.cwd() },
    out: { type: 'string', default: 'test/fixtures/format-v1-crash' },
    phase: { type: 'string' },
    dir: { type: 'string' },
  },
});
const checkout = path.resolve(values.checkout);

interface StoreLike {
  addSession(s: Record<string, unknown>): Promise<unknown>;
  appendTranscript(name: string, entry: Record<string, unknown>): Promise<number>;
  appendParticipant(name: string, userId: string): Promise<boolean>;
  close(): Promise<void>;
}
interface Acked {
  transcripts: Record<string, { seq: number; entry: Record<string, unknown> }[]>;
  participants: Record<string, string[]>;
  sessions: string[];
}

const session = (name: string) => ({ name, channelID: `ch-${name}`, type: 'claude', cmd: 'claude' });
// Compressible (git stores the fixture small) yet distinct per entry.
const entry = (ts: string, size = 0) => ({ ts, role: 'user', text: `${ts} ${'x'.repeat(size)}`, cost: 0.001, tokens_in: 10, tokens_out: 20 });

async function openStore(dir: string): Promise<StoreLike> {
  const mod = (await import(pathToFileURL(path.join(checkout, 'src/store/store.ts')).href)) as {
    Store: { open(p: string, o: Record<string, unknown>): Promise<StoreLike> };
  };
  return mod.Store.open(path.join(dir, 'state.json'), { durability: 'sync' });
}

async function append(store: StoreLike, acked: Acked, name: string, e: Record<string, unknown>): Promise<void> {
  const seq = await store.appendTranscript(name, e);
  (acked.transcripts[name] ??= []).push({ seq, entry: e });
}

/** Phase 1 and 2 each run in a process of their own: phase 2's exits without closing its store. */
async function phase(which: string, dir: string): Promise<void> {
  const ackFile = path.join(dir, '..', 'acked.json');
  const acked: Acked = which === '1'
    ? { transcripts: {}, participants: {}, sessions: [] }
    : (JSON.parse(await import('node:fs').then((fs) => fs.readFileSync(ackFile, 'utf8'))) as Acked);
  const store = await openStore(dir);
  if (which === '1') {
    for (const n of ['a', 'b']) {
      await store.addSession(session(n));
      acked.sessions.push(n);
    }
    // 70 × 64 KiB: past the 4 MiB trigger once, so a is compacted to its newest ~2 MiB.
    for (let i = 0; i < 70; i++) await append(store, acked, 'a', entry(`2026-01-01T00:00:${String(i).padStart(2, '0')}Z`, 64 * 1024));
    for (let i = 0; i < 3; i++) await append(store, acked, 'b', entry(`2026-01-01T00:01:0${i}Z`));
    await store.appendParticipant('a', 'u1');
    acked.participants.a = ['u1'];
    await store.close();
  } else {
    for (let i = 0; i < 5; i++) await append(store, acked, 'a', entry(`2026-01-02T00:00:0${i}Z`, 100));
    for (let i = 3; i < 5; i++) await append(store, acked, 'b', entry(`2026-01-01T00:01:0${i}Z`));
    await store.addSession(session('c'));
    acked.sessions.push('c');
    for (let i = 0; i < 3; i++) await append(store, acked, 'c', entry(`2026-01-03T00:00:0${i}Z`));
    for (const u of ['u2', 'u3']) await store.appendParticipant('a', u);
    acked.participants.a?.push('u2', 'u3');
    await store.appendParticipant('c', 'v1');
    acked.participants.c = ['v1'];
    // Never closed: the log keeps every record since the last checkpoint.
  }
  writeFileSync(ackFile, JSON.stringify(acked));
  process.exit(0);
}

/** Bytes of `e`'s line as every build writes it (Go's encoding of these plain fields). */
const lineLength = (e: Record<string, unknown>): number => Buffer.byteLength(`${JSON.stringify(e)}\n`);

async function main(): Promise<void> {
  if (values.phase) return phase(values.phase, values.dir as string);
  const work = mkdtempSync(path.join(os.tmpdir(), 'hs-fixture-'));
  const dir = path.join(work, 'state');
  mkdirSync(dir, { mode: 0o700 });
  const self = [process.execPath, '--import', 'tsx', path.resolve(import.meta.filename)];
  for (const p of ['1', '2']) execFileSync(self[0] as string, [...self.slice(1), '--checkout', checkout, '--phase', p, '--dir', dir], { stdio: 'inherit' });
  const acked = JSON.parse(await import('node:fs').then((fs) => fs.readFileSync(path.join(work, 'acked.json'), 'utf8'))) as Acked;

  // The power loss: what the files lacked while the log was already synced.
  const a = path.join(dir, 'transcripts/a.jsonl');
  const aTail = (acked.transcripts.a ?? []).slice(-3).map((x) => lineLength(x.entry));
  truncateSync(a, statSync(a).size - Math.floor((aTail[0] as number) / 2) - (aTail[1] as number) - (aTail[2] as number));
  truncateSync(path.join(dir, 'transcripts/c.jsonl'), 0);
  const pa = path.join(dir, 'participants/a.log');
  truncateSync(pa, statSync(pa).size - 'u3\n'.length);

  const inodes: Record<string, number> = {};
  const walk = (rel: string): void => {
    for (const n of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${n.name}` : n.name;
      if (n.isDirectory()) walk(r);
      else inodes[r] = statSync(path.join(dir, r)).ino;
    }
  };
  walk('');
  const version = execFileSync('git', ['-C', checkout, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  const out = path.resolve(values.out);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  cpSync(dir, path.join(out, 'state'), { recursive: true });
  rmSync(path.join(out, 'state/.herrscher-state/server.lock'), { force: true });
  // Long texts are kept as their length and sha256: the entries themselves would be megabytes.
  const short = (e: Record<string, unknown>) => {
    const text = String(e.text);
    return text.length <= 200 ? e : { ...e, text: undefined, textBytes: Buffer.byteLength(text), textSha256: createHash('sha256').update(text).digest('hex') };
  };
  const transcripts = Object.fromEntries(Object.entries(acked.transcripts).map(([n, xs]) => [n, xs.map((x) => ({ seq: x.seq, entry: short(x.entry) }))]));
  const expected = { writtenBy: version, acked: { ...acked, transcripts }, inodes };
  writeFileSync(path.join(out, 'expected.json'), `${JSON.stringify(expected, null, 1)}\n`);
  rmSync(work, { recursive: true, force: true });
  console.log(`wrote ${out} (written by ${version})`);
}

await main();
