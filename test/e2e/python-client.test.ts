// A client in another language: test/fixtures/python_client.py (standard library only) spawns
// `serve --stdio` and speaks NDJSON on its stdio, then speaks NDJSON on the socket of a server
// this test started. It prints what it saw; the results and the files it left are checked here.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, REPO, serveSocket } from '../helpers/cli.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const SCRIPT = path.join(REPO, 'test/fixtures/python_client.py');
const INC = /^inc_[A-Z2-7]{26}$/;

interface PythonReport {
  stdio: {
    initialize: { serverInfo: { name: string }; statePath: string; capabilities: { methods: string[] } };
    add: { session: Record<string, unknown> };
    append: unknown;
    read: unknown;
    unknown: number;
    shutdown: unknown;
    exit: number;
  };
  socket: {
    add: { session: Record<string, unknown> };
    participant: unknown;
    again: unknown;
    participants: unknown;
    find: { session: Record<string, unknown> };
    duplicate: number;
  };
}

test('a Python bridge speaks NDJSON to the server over stdio and over the socket', { timeout: 60_000 }, async (t) => {
  const stdioDir = tempDir();
  const socketDir = tempDir();
  const socket = path.join(socketDir, 's.sock');
  const server = await serveSocket(t, statePathIn(socketDir), socket);

  const py = spawn('python3', [SCRIPT, process.execPath, CLI, statePathIn(stdioDir), socket], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => {
    if (py.exitCode === null && py.signalCode === null) py.kill('SIGKILL');
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  py.stdout.on('data', (c: Buffer) => out.push(c));
  py.stderr.on('data', (c: Buffer) => err.push(c));
  const code = await new Promise<number | null>((resolve) => py.once('close', (c) => resolve(c)));
  const stderr = Buffer.concat(err).toString('utf8');
  assert.equal(code, 0, `python_client.py failed:\n${stderr}`);
  const report = JSON.parse(Buffer.concat(out).toString('utf8')) as PythonReport;

  const s = report.stdio;
  assert.equal(s.initialize.serverInfo.name, 'herrscher-state');
  assert.equal(s.initialize.statePath, statePathIn(stdioDir));
  assert.ok(s.initialize.capabilities.methods.includes('transcript/append'));
  const added = s.add.session;
  assert.match(String(added.incarnation), INC);
  assert.deepEqual(added, { id: 's_py', incarnation: added.incarnation, name: 'py', channelID: '', type: '', cmd: 'python3 bridge.py' });
  assert.deepEqual(s.append, { seq: 0 });
  const entry = { ts: '2026-01-02T03:04:05Z', role: 'user', text: 'h\u00e9llo \u2028 <py> & "q"' };
  assert.deepEqual(s.read, { entries: [entry], firstSeq: 0 });
  assert.equal(s.unknown, -32601);
  assert.equal(s.shutdown, null);
  assert.equal(s.exit, 0, 'the stdio server exits 0 after shutdown + exit');
  assert.equal(
    readFileSync(path.join(stdioDir, 'transcripts/py.jsonl'), 'utf8'),
    '{"ts":"2026-01-02T03:04:05Z","role":"user","text":"h\u00e9llo \\u2028 \\u003cpy\\u003e \\u0026 \\"q\\""}\n',
  );

  const k = report.socket;
  assert.match(String(k.add.session.incarnation), INC);
  assert.deepEqual(k.add.session, { id: 's_sock', incarnation: k.add.session.incarnation, name: 'sock', channelID: '42', type: '', cmd: '' });
  assert.deepEqual(k.participant, { added: true });
  assert.deepEqual(k.again, { added: false }, 'the id was trimmed, so "u1" is already there');
  assert.deepEqual(k.participants, { userIds: ['u1'] });
  assert.deepEqual(k.find, { session: k.add.session });
  assert.equal(k.duplicate, -32010);
  assert.equal(readFileSync(path.join(socketDir, 'participants/sock.log'), 'utf8'), 'u1\n');

  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
});
