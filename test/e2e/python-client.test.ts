// A client in another language: the Python client (clients/python/herrscher_state.py, standard
// library only) spawns `serve --stdio` and speaks to it on its stdio, then connects to the socket
// of a server this test runs in process (the Python side is the subject). It prints what it saw;
// the results and the files it left are checked here. (clients/python/test_herrscher_state.py
// covers the client method by method.)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, REPO } from '../helpers/cli.js';
import { closeClean, startServer } from '../helpers/server.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const INC = /^inc_[A-Z2-7]{26}$/;

const BRIDGE = `
import json, subprocess, sys
sys.path.insert(0, ${JSON.stringify(path.join(REPO, 'clients/python'))})
import herrscher_state as hs
node, cli, stdio_state, sock = sys.argv[1:]
entry = {"ts": "2026-01-02T03:04:05Z", "role": "user", "text": "h\\u00e9llo \\u2028 <py> & \\"q\\""}

c = hs.spawn(stdio_state, command=[node, cli], stderr=subprocess.DEVNULL)
stdio = {"initialize": c.initialize(clientInfo={"name": "py"}), "add": c.add_session({"name": "py", "cmd": "python3 bridge.py"})}
stdio["append"] = c.append_transcript("py", entry)
stdio["read"] = c.read_page("py")
try:
    c.call("no/such")
except hs.MethodNotFound as e:
    stdio["unknown"] = e.code
stdio["shutdown"] = c.shutdown()
c.close()
stdio["exit"] = c.process.returncode

k = hs.connect(socket=sock)
report = {"stdio": stdio, "socket": {"add": k.add_session({"name": "sock", "channelID": "42"})}}
s = report["socket"]
s["participant"] = k.append_participant("sock", " u1 ")
s["again"] = k.append_participant("sock", "u1")
s["participants"] = k.read_participants("sock")
s["find"] = k.find_session("sock")
try:
    k.add_session({"name": "sock"})
except hs.SessionExists as e:
    s["duplicate"] = e.code
k.close()
print(json.dumps(report))
`;

interface PythonReport {
  stdio: {
    initialize: { serverInfo: { name: string }; statePath: string; capabilities: { methods: string[] } };
    add: Record<string, unknown>;
    append: number;
    read: unknown;
    unknown: number;
    shutdown: unknown;
    exit: number;
  };
  socket: {
    add: Record<string, unknown>;
    participant: boolean;
    again: boolean;
    participants: string[];
    find: Record<string, unknown>;
    duplicate: number;
  };
}

test('a Python bridge speaks to the server over stdio and over the socket', { timeout: 60_000 }, async (t) => {
  const stdioDir = tempDir();
  const server = await startServer(t);
  const { socket, dir: socketDir } = server;

  const py = spawn('python3', ['-c', BRIDGE, process.execPath, CLI, statePathIn(stdioDir), socket], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, XDG_RUNTIME_DIR: tempDir(), HERRSCHER_STATE_SOCKET: '' },
  });
  t.after(() => {
    if (py.exitCode === null && py.signalCode === null) py.kill('SIGKILL');
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  py.stdout.on('data', (c: Buffer) => out.push(c));
  py.stderr.on('data', (c: Buffer) => err.push(c));
  const code = await new Promise<number | null>((resolve) => py.once('close', (c) => resolve(c)));
  assert.equal(code, 0, `the Python bridge failed:\n${Buffer.concat(err).toString('utf8')}`);
  const report = JSON.parse(Buffer.concat(out).toString('utf8')) as PythonReport;

  const s = report.stdio;
  assert.equal(s.initialize.serverInfo.name, 'herrscher-state');
  assert.equal(s.initialize.statePath, statePathIn(stdioDir));
  assert.ok(s.initialize.capabilities.methods.includes('transcript/append'));
  assert.match(String(s.add.incarnation), INC);
  assert.deepEqual(s.add, { id: 's_py', incarnation: s.add.incarnation, name: 'py', channelID: '', type: '', cmd: 'python3 bridge.py' });
  assert.equal(s.append, 0);
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
  assert.match(String(k.add.incarnation), INC);
  assert.deepEqual(k.add, { id: 's_sock', incarnation: k.add.incarnation, name: 'sock', channelID: '42', type: '', cmd: '' });
  assert.equal(k.participant, true);
  assert.equal(k.again, false, 'the id was trimmed, so "u1" is already there');
  assert.deepEqual(k.participants, ['u1']);
  assert.deepEqual(k.find, k.add);
  assert.equal(k.duplicate, -32010);
  assert.equal(readFileSync(path.join(socketDir, 'participants/sock.log'), 'utf8'), 'u1\n');

  await closeClean(server);
});
