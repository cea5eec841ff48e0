// The listening socket itself: its mode, its file's life cycle, and the paths it refuses.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { bounded } from './frames.js';
import { connectUnixSocket, defaultSocketPath, listenUnixSocket, SocketError, SUN_PATH_BYTES } from '../../src/transport/socket.js';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'hs-sock-'));
  dirs.push(d);
  return d;
}

const ignore = (s: net.Socket): void => void s.end();

/** A socket file whose server died without unlinking it, as after kill -9. */
async function leaveStaleSocket(at: string): Promise<void> {
  const child = spawn(process.execPath, [
    '-e',
    `require('net').createServer().listen(${JSON.stringify(at)}, () => process.kill(process.pid, 'SIGKILL'))`,
  ]);
  await once(child, 'exit');
  assert.ok(fs.lstatSync(at).isSocket(), 'the killed server left its socket file');
}

test('the socket file is created with mode 0600', bounded, async () => {
  const at = path.join(tempDir(), 's.sock');
  const listener = await listenUnixSocket(at, ignore);
  try {
    assert.equal(fs.statSync(at).mode & 0o777, 0o600);
    assert.ok(fs.statSync(at).isSocket());
  } finally {
    await listener.close();
  }
});

test('creating the socket leaves no staging folder behind', bounded, async () => {
  const dir = tempDir();
  const listener = await listenUnixSocket(path.join(dir, 's.sock'), ignore);
  try {
    assert.deepEqual(fs.readdirSync(dir), ['s.sock']);
  } finally {
    await listener.close();
  }
});

test('the socket is first bound in a folder inside its own folder, never beside it in the parent', bounded, async () => {
  const parent = tempDir();
  const dir = path.join(parent, 'sock');
  fs.mkdirSync(dir, { mode: 0o700 });
  /** Names created in `folder` (inotify), up to and including a sentinel file this test makes last. */
  const seen = (folder: string): { names: string[]; done: Promise<void>; close: () => void } => {
    const names: string[] = [];
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    const watcher = fs.watch(folder, (_event, name) => {
      if (name === null) return;
      names.push(name);
      if (name === 'sentinel') finish();
    });
    return { names, done, close: () => watcher.close() };
  };
  const inParent = seen(parent);
  const inDir = seen(dir);
  try {
    const listener = await listenUnixSocket(path.join(dir, 's.sock'), ignore);
    await listener.close();
    // inotify reports in order: once each sentinel is seen, everything the listen made was too.
    fs.writeFileSync(path.join(parent, 'sentinel'), '');
    fs.writeFileSync(path.join(dir, 'sentinel'), '');
    await Promise.all([inParent.done, inDir.done]);
    assert.deepEqual([...new Set(inParent.names)], ['sentinel'], 'nothing made beside the socket\'s folder');
    assert.ok(inDir.names.some((n) => n.startsWith('.sock-')), `a staging folder inside it: ${inDir.names.join(', ')}`);
  } finally {
    inParent.close();
    inDir.close();
  }
});

test('a client connects through the published path', bounded, async () => {
  const at = path.join(tempDir(), 's.sock');
  const accepted: net.Socket[] = [];
  const listener = await listenUnixSocket(at, (s) => {
    accepted.push(s);
    s.end('hi');
  });
  try {
    const socket = await connectUnixSocket(at, { timeoutMs: 5000 });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    await once(socket, 'end');
    assert.equal(Buffer.concat(chunks).toString(), 'hi');
    assert.equal(accepted.length, 1);
    socket.destroy();
  } finally {
    await listener.close();
  }
});

test('close removes the socket file', bounded, async () => {
  const at = path.join(tempDir(), 's.sock');
  const listener = await listenUnixSocket(at, ignore);
  await listener.close();
  assert.equal(fs.existsSync(at), false);
});

test('close leaves alone a socket file another server has published since', bounded, async () => {
  const at = path.join(tempDir(), 's.sock');
  const first = await listenUnixSocket(at, ignore);
  fs.unlinkSync(at);
  const second = await listenUnixSocket(at, ignore);
  try {
    await first.close();
    assert.ok(fs.lstatSync(at).isSocket(), "the second server's file survives the first one's close");
  } finally {
    await second.close();
  }
});

test('a stale socket file left by a killed server is replaced', bounded, async () => {
  const at = path.join(tempDir(), 's.sock');
  await leaveStaleSocket(at);
  const listener = await listenUnixSocket(at, (s) => s.end('fresh'));
  try {
    const socket = await connectUnixSocket(at);
    const [data] = (await once(socket, 'data')) as [Buffer];
    assert.equal(data.toString(), 'fresh');
    socket.destroy();
    assert.equal(fs.statSync(at).mode & 0o777, 0o600);
  } finally {
    await listener.close();
  }
});

test('a socket a live server answers on is refused, and that server keeps it', bounded, async () => {
  const at = path.join(tempDir(), 's.sock');
  const live = net.createServer(ignore);
  await new Promise<void>((resolve) => live.listen(at, resolve));
  try {
    await assert.rejects(listenUnixSocket(at, ignore), { message: `socket ${at} is in use by another server` });
    const probe = await connectUnixSocket(at);
    probe.destroy();
  } finally {
    await new Promise((resolve) => live.close(resolve));
  }
});

test('a regular file at the socket path is refused and left untouched', bounded, async () => {
  const at = path.join(tempDir(), 'state.json');
  fs.writeFileSync(at, '{}');
  await assert.rejects(listenUnixSocket(at, ignore), /exists and is not a socket; refusing to replace it/);
  assert.equal(fs.readFileSync(at, 'utf8'), '{}');
});

test('a path too long for sun_path is refused with the limit and its length', bounded, async () => {
  const dir = tempDir();
  const at = path.join(dir, `${'x'.repeat(SUN_PATH_BYTES + 10 - dir.length)}.sock`);
  const bytes = Buffer.byteLength(at);
  await assert.rejects(listenUnixSocket(at, ignore), (err: Error) => {
    assert.match(err.message, new RegExp(`is ${bytes} bytes long`));
    assert.match(err.message, new RegExp(`at most ${SUN_PATH_BYTES - 1} bytes`));
    return true;
  });
  assert.equal(fs.readdirSync(dir).length, 0, 'nothing was created');
});

for (const mode of [0o777, 0o1777, 0o775]) {
  test(`a folder others may write to (mode 0${mode.toString(8)}, sticky or not) is refused with the rule clients apply, and nothing is created`, bounded, async () => {
    const dir = tempDir();
    fs.chmodSync(dir, mode);
    await assert.rejects(listenUnixSocket(path.join(dir, 's.sock'), ignore), (err: unknown) => {
      assert.ok(err instanceof SocketError);
      assert.equal(err.code, 'EUNSAFE');
      assert.match(err.message, new RegExp(`its folder ${dir} is writable by others \\(mode 0${mode.toString(8)}\\)`));
      assert.match(err.message, /clients connect only to a socket in a folder of their user that no one else may write to/);
      return true;
    });
    assert.deepEqual(fs.readdirSync(dir), []);
  });
}

test('connecting to a missing socket says the file does not exist', bounded, async () => {
  const at = path.join(tempDir(), 'none.sock');
  await assert.rejects(connectUnixSocket(at, { timeoutMs: 5000 }), { code: 'ENOENT', message: `no server at socket ${at}: the file does not exist; start one with \`herrscher-state serve --socket ${at}\`` });
});

test('connecting to a stale socket says no server is listening', bounded, async () => {
  const at = path.join(tempDir(), 's.sock');
  await leaveStaleSocket(at);
  await assert.rejects(connectUnixSocket(at, { timeoutMs: 5000 }), { code: 'ECONNREFUSED' });
});

test('the default socket path is in the per-user folder: $XDG_RUNTIME_DIR/herrscher-state, else $TMPDIR/herrscher-state-<uid>', bounded, () => {
  const uid = process.getuid?.() ?? 'user';
  const tmpOnly = { TMPDIR: '/some/tmp' };
  assert.equal(defaultSocketPath(undefined, tmpOnly), path.join('/some/tmp', `herrscher-state-${uid}`, 'herrscher-state.sock'));
  assert.equal(defaultSocketPath('prod-1', tmpOnly), path.join('/some/tmp', `herrscher-state-${uid}`, 'herrscher-state-prod-1.sock'));
  assert.equal(defaultSocketPath(undefined, { ...tmpOnly, XDG_RUNTIME_DIR: '/run/user/7' }), '/run/user/7/herrscher-state/herrscher-state.sock');
  assert.equal(defaultSocketPath(undefined, {}), path.join(os.tmpdir(), `herrscher-state-${uid}`, 'herrscher-state.sock'));
  assert.throws(() => defaultSocketPath('../x'), /instance id must be/);
});

test('past maxConnections open at once, a new connection is closed on arrival and reported; a freed slot serves again', bounded, async () => {
  const at = path.join(tempDir(), 's.sock');
  const held: net.Socket[] = [];
  let drops = 0;
  const keep = (s: net.Socket): void => {
    held.push(s);
    s.on('end', () => s.destroy()); // allowHalfOpen: the server side closes once the client left
  };
  const listener = await listenUnixSocket(at, keep, { maxConnections: 2, onDrop: () => drops++ });
  const open = async (): Promise<net.Socket> => {
    const c = net.createConnection(at);
    await once(c, 'connect');
    return c;
  };
  try {
    const a = await open();
    const b = await open();
    while (held.length < 2) await new Promise((r) => setImmediate(r));
    const c = await open();
    await once(c, 'close'); // the server closed it without a word
    assert.equal(drops, 1);
    assert.equal(held.length, 2, 'the third connection never reached the handler');
    a.destroy();
    await once(held[0] as net.Socket, 'close');
    const d = await open();
    while (held.length < 3) await new Promise((r) => setImmediate(r));
    assert.equal(drops, 1, 'a freed slot is used again');
    for (const s of [b, d, ...held]) s.destroy();
  } finally {
    await listener.close();
  }
});
