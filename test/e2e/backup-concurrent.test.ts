// `backup` of a server that several processes write to at once, then `verify` and `restore`, all
// through the built CLI. Each writer runs one op at a time (test/fixtures/backup-writer.mjs), so a
// copy at one moment holds, of each writer, exactly a prefix of its ops: every op answered before
// the backup was asked for, none started after its answer, and state.json, transcripts and
// journals agree (an op is in only if every op before it is). The revision the backup reports is
// the one whose document it holds: its sessions are those the change feed added up to it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { connect } from '../../src/client/client.js';
import { REPO, runToEnd, serveSocket } from '../helpers/cli.js';
import { TIMEOUT } from '../helpers/feed.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const WRITER = path.join(REPO, 'test/fixtures/backup-writer.mjs');
const WRITERS = ['wa', 'wb', 'wc'];

interface Writer {
  name: string;
  acked: number;
  mark?: number;
  exited: Promise<number | null>;
  send(line: string): void;
  /** Resolves once `ready()` holds, checked at each line the writer prints. */
  until(ready: () => boolean): Promise<void>;
  stderr(): string;
}

function startWriter(t: { after(fn: () => void): void }, socket: string, name: string): Writer {
  const child = spawn(process.execPath, [WRITER, socket, name], { stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const waiters = new Set<() => void>();
  const w: Writer = {
    name, acked: 0,
    exited: new Promise((resolve) => child.once('close', (code) => resolve(code))),
    send: (line) => child.stdin.write(`${line}\n`),
    until: (ready) => new Promise<void>((resolve, reject) => {
      if (ready()) return resolve();
      const check = (): void => {
        if (!ready()) return;
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
      void w.exited.then(() => reject(new Error(`writer ${name} exited first; stderr:\n${err}`)));
    }),
    stderr: () => err,
  };
  let out = '';
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
    for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
      const msg = JSON.parse(out.slice(0, nl)) as { acked?: number; mark?: number };
      out = out.slice(nl + 1);
      if (msg.acked !== undefined) w.acked = msg.acked + 1;
      if (msg.mark !== undefined) w.mark = msg.mark;
      for (const check of [...waiters]) check();
    }
  });
  return w;
}

/** How many of writer `w`'s ops the state dir (or backup) `dir` holds, and whether they are a prefix of its ops. */
function opsIn(dir: string, w: string): { present: number[]; prefix: number } {
  const doc = JSON.parse(readFileSync(path.join(dir, 'state.json'), 'utf8')) as { sessions: { name: string }[] | null };
  const names = new Set((doc.sessions ?? []).map((s) => s.name));
  const present: number[] = [];
  for (let i = 0; i < 10_000; i++) {
    const name = `${w}-${i}`;
    const t = path.join(dir, 'transcripts', `${name}.jsonl`);
    const p = path.join(dir, 'participants', `${name}.log`);
    const has = [
      names.has(name),
      existsSync(t) && readFileSync(t, 'utf8').includes(`"text":"${name}"`),
      existsSync(p) && readFileSync(p, 'utf8') === `u${i}\n`,
    ];
    if (!has.some(Boolean)) break;
    has.forEach((h, j) => h && present.push(3 * i + j));
  }
  let prefix = 0;
  while (present.includes(prefix)) prefix++;
  return { present, prefix };
}

test('backup under writers from several processes holds exactly a prefix of each one\'s ops at its revision; verify passes; restore serves it', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const socket = path.join(dir, 'hs.sock');
  const server = await serveSocket(t, statePathIn(dir), socket, ['--log-level', 'warn']);
  // The change feed says at which revision each session was added.
  const watcher = await connect({ socket });
  t.after(() => watcher.close());
  const added: { revision: number; name: string }[] = [];
  let feedSeen = (): void => undefined;
  watcher.onNotification('session/didChange', (p) => {
    if (p.kind === 'added') added.push({ revision: p.revision, name: p.name });
    feedSeen();
  });
  const { epoch } = await watcher.watchSubscribe({ sessions: true });
  const writers = WRITERS.map((name) => startWriter(t, socket, name));
  // Well under way: every writer has had ops answered (and keeps going).
  await Promise.all(writers.map((w) => w.until(() => w.acked >= 7)));
  const ackedBefore = writers.map((w) => w.acked);

  const dest = path.join(tempDir(), 'backup');
  const got = await runToEnd(['backup', dest, '--socket', socket, '--json']);
  assert.equal(got.code, 0, got.stderr);
  const result = JSON.parse(got.stdout) as { revision: number; epoch: string; files: number; dest: string };
  assert.equal(result.dest, dest);
  assert.equal(result.epoch, epoch);

  // Every op that starts from now on started after the backup was answered.
  for (const w of writers) w.send('mark');
  await Promise.all(writers.map((w) => w.until(() => w.mark !== undefined && w.acked >= (w.mark ?? 0) + 3)));
  for (const w of writers) w.send('stop');
  assert.deepEqual(await Promise.all(writers.map((w) => w.exited)), writers.map(() => 0), writers.map((w) => w.stderr()).join('\n'));

  const backedUp = new Set<string>();
  for (const [n, w] of writers.entries()) {
    const { present, prefix } = opsIn(dest, w.name);
    assert.equal(present.length, prefix, `${w.name}: the backup holds ops ${JSON.stringify(present)}, not a prefix of its ops`);
    assert.ok(prefix >= (ackedBefore[n] as number), `${w.name}: ${ackedBefore[n]} ops were answered before the backup was asked for, it holds ${prefix}`);
    assert.ok(prefix <= (w.mark as number), `${w.name}: ops from ${w.mark} on started after the backup's answer, yet it holds ${prefix}`);
    for (let i = 0; 3 * i < prefix; i++) backedUp.add(`${w.name}-${i}`);
    // And the live state went on past the backup.
    assert.ok(opsIn(dir, w.name).prefix > prefix);
  }
  // The copy's state.json is the document at its revision: the sessions added up to it, no later one.
  const live = (JSON.parse(readFileSync(statePathIn(dir), 'utf8')) as { sessions: unknown[] }).sessions.length;
  await new Promise<void>((resolve) => {
    feedSeen = () => void (added.length === live && resolve());
    feedSeen();
  });
  assert.deepEqual(new Set(added.filter((a) => a.revision <= result.revision).map((a) => a.name)), backedUp);
  const sessions = backedUp.size;
  const manifest = JSON.parse(readFileSync(path.join(dest, 'backup-manifest.json'), 'utf8')) as { revision: number; files: Record<string, unknown> };
  assert.equal(manifest.revision, result.revision);
  assert.equal(Object.keys(manifest.files).length, result.files);
  assert.deepEqual(readdirSync(dest).sort(), ['backup-manifest.json', 'participants', 'state.json', 'transcripts']);

  const verified = await runToEnd(['verify', dest]);
  assert.equal(verified.code, 0, verified.stdout + verified.stderr);
  assert.equal(verified.stdout, '');

  const restored = path.join(tempDir(), 'restored');
  const r = await runToEnd(['restore', dest, '--state', statePathIn(restored)]);
  assert.equal(r.code, 0, r.stderr);
  for (const rel of Object.keys(manifest.files)) assert.deepEqual(readFileSync(path.join(restored, rel)), readFileSync(path.join(dest, rel)), rel);
  server.child.kill('SIGTERM');
  await server.exited;

  // serve starts on it with everything the backup holds, and numbering goes on.
  const socket2 = path.join(restored, 'hs.sock');
  await serveSocket(t, statePathIn(restored), socket2, ['--log-level', 'warn']);
  const client = await connect({ socket: socket2 });
  t.after(() => client.close());
  assert.equal((await client.sessionList()).sessions.length, sessions);
  const name = `${WRITERS[0]}-0`;
  assert.deepEqual((await client.transcriptRead({ name })).entries.map((e) => e.text), [name]);
  assert.deepEqual((await client.transcriptAppend({ name, entry: { ts: '2026-01-01T00:00:01Z', role: 'user', text: 'after' } })).seq, 1);
  assert.deepEqual((await client.participantsRead({ name })).userIds, ['u0']);
});
