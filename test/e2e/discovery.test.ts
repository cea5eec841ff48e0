// One rule to find a server and no squatted socket (client side): after an
// instance id change every client command still reaches the server with no socket flag; two
// users each reach their own default server; the per-user default folder under
// $XDG_RUNTIME_DIR or $TMPDIR is refused when it is a symlink or others may write to it; a socket
// another user owns is refused before anything is sent. The process boundary (where `serve`
// listens, what the CLI finds) is the subject, so the built CLI is spawned; where a check only
// needs the rule that every client command applies (connect() and discoverSocket() with the
// environment the command would have), it runs in this process. The tests are independent (each
// its own folders and environment) and mostly wait on their processes, so they run side by side.
import assert from 'node:assert/strict';
import { spawn as spawnChild } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import { connect } from '../../src/client/client.js';
import { discoverSocket, serveSocket as serveSocketOf } from '../../src/transport/discovery.js';
import { SocketError } from '../../src/transport/socket.js';
import { defaultSocketFolder } from '../../src/transport/socket-folder.js';
import type { Child, Ctx } from '../helpers/cli.js';
import { CLI, REPO, runCli, runToEnd, waitForSocket } from '../helpers/cli.js';
import { closeClean, startServer } from '../helpers/server.js';
import { tempDir, tempDirOthersCanReach } from '../helpers/temp-dir.js';
import { RawClient } from '../helpers/wire.js';

/**
 * A safety net only: on a 2-core machine under load 35 one run of the CLI took seconds, and the
 * tests run side by side (see the top of the file).
 */
const TIMEOUT = 120_000;
const SLOW = TIMEOUT;
const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;

/** A private environment: its own state dir (the default state) and runtime folder. */
function world(): { env: NodeJS.ProcessEnv; stateDir: string; runtime: string } {
  const stateDir = tempDir('hs-st-');
  const runtime = tempDir('hs-run-');
  return { stateDir, runtime, env: { ...process.env, HERRSCHER_STATE_DIR: stateDir, XDG_RUNTIME_DIR: runtime, HERRSCHER_STATE_SOCKET: undefined } };
}

async function stop(server: Child): Promise<void> {
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr());
}

// Side by side, a few at a time: each test mostly waits on the processes it started.
describe('discovery', { concurrency: 4 }, () => {
  test('after state/setInstanceID, call, tail, sessions, socket, status and connect() reach the server with no socket flag, also after a restart', { timeout: TIMEOUT }, async (t) => {
    const { env, runtime, stateDir } = world();
    const folder = path.join(runtime, 'herrscher-state');
    let server = runCli(t, ['serve'], { env });
    await waitForSocket(path.join(folder, 'herrscher-state.sock'), server);

    const set = await runToEnd(['call', 'state/setInstanceID', '{"instanceID":"alice"}'], { env });
    assert.equal(set.code, 0, set.stderr);
    const named = path.join(folder, 'herrscher-state-alice.sock');
    const where = await runToEnd(['socket'], { env });
    assert.deepEqual([where.code, where.stdout], [0, `${named}\n`], where.stderr);
    assert.equal(existsSync(path.join(folder, 'herrscher-state.sock')), false, 'the old default name is gone');

    // call reached it above (setInstanceID); connect() writes the rest, one process fewer.
    const client = await connect({ env });
    await client.sessionAdd({ session: { name: 'main' } });
    await client.transcriptAppend({ name: 'main', entry: { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'hello over connect()' } });
    assert.equal((await client.status()).socket, named);
    await client.close();
    // Three readers at once, each its own process.
    const [tail, sessions, status] = await Promise.all([runToEnd(['tail', 'main'], { env }), runToEnd(['sessions'], { env }), runToEnd(['status', '--json'], { env })]);
    assert.equal(tail.code, 0, tail.stderr);
    assert.match(tail.stdout, /hello over connect\(\)/);
    assert.equal(sessions.code, 0, sessions.stderr);
    assert.match(sessions.stdout, /main/);
    assert.equal(status.code, 0, status.stderr);
    assert.equal((JSON.parse(status.stdout) as { pid: number }).pid, server.pid);

    await stop(server);
    assert.equal(existsSync(path.join(stateDir, '.herrscher-state', 'state.json.serving.json')), false, 'a clean stop removes the record');
    // Nothing left to find: the rule falls back to the default socket, where nobody answers (that
    // `socket` then exits 1 is the --state A test's, below).
    assert.deepEqual(await discoverSocket({ env }), { path: path.join(folder, 'herrscher-state.sock'), source: 'default' });
    await assert.rejects(connect({ env }), (err: unknown) => err instanceof SocketError);
    server = runCli(t, ['serve'], { env });
    await waitForSocket(named, server);
    const again = await runToEnd(['call', 'state/qualifiedName', '{"name":"x"}'], { env });
    assert.deepEqual([again.code, JSON.parse(again.stdout)], [0, { qualifiedName: 'alice__x' }], again.stderr);
    await stop(server);
  });

  test('a record left by a server killed with -9 is ignored: the client falls back to the default socket', { timeout: TIMEOUT }, async (t) => {
    const { env, stateDir, runtime } = world();
    const server = runCli(t, ['serve', '--socket', path.join(stateDir, 'own.sock')], { env });
    await waitForSocket(path.join(stateDir, 'own.sock'), server);
    // The rule `socket` prints (discovery.ts): the record, read as any client command reads it.
    // serve writes the record just after its socket accepts: wait for the file (a record never
    // written fails on the test's timeout, a server gone first on the assertion below).
    const record = path.join(stateDir, '.herrscher-state', 'state.json.serving.json');
    while (!existsSync(record) && server.child.exitCode === null) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(await discoverSocket({ env }), { path: path.join(stateDir, 'own.sock'), source: 'record' }, 'the record leads to a socket of any name');
    server.child.kill('SIGKILL');
    await server.exited;
    assert.ok(existsSync(record), 'kill -9 left the record');
    const r = await runToEnd(['call', 'state/get'], { env });
    assert.equal(r.code, 1);
    assert.ok(r.stderr.includes(path.join(runtime, 'herrscher-state', 'herrscher-state.sock')), `the default socket was tried: ${r.stderr}`);
  });

  test('serve --stdio also serves the default socket; --no-socket serves stdio alone; a default socket held by another server leaves stdio alone with one warning', { timeout: TIMEOUT }, async (t) => {
    const { env, runtime } = world();
    const sock = path.join(runtime, 'herrscher-state', 'herrscher-state.sock');
    // The other server runs in this process: only the --stdio host's reaction to it is the subject.
    const other = await startServer(t, { socket: { path: sock, source: 'default' } });

    const host = runCli(t, ['serve', '--stdio'], { env, collectStdout: true });
    host.child.stdin?.write('{"jsonrpc":"2.0","id":1,"method":"status"}\n');
    // Until the answer or the host's exit; the test's timeout bounds a host that never answers.
    while (!host.stdout().includes('"id":1') && host.child.exitCode === null) await new Promise((r) => setTimeout(r, 25));
    assert.match(host.stdout(), /"socket":null/, 'stdio alone');
    host.child.stdin?.end();
    assert.equal((await host.exited).code, 0);
    // Logs are written asynchronously and flushed at the stop: count the warnings after the exit.
    assert.equal(host.stderr().match(/held by another live server/g)?.length, 1, host.stderr());
    await closeClean(other);

    const alone = runCli(t, ['serve', '--stdio', '--no-socket'], { env });
    const sidecar = runCli(t, ['serve', '--stdio', '--state', path.join(tempDir(), 'state.json')], { env });
    await waitForSocket(sock, sidecar);
    // Which process answers on the default socket is the subject, not the status command's output.
    const who = await connect({ socket: sock });
    assert.equal((await who.status()).pid, sidecar.pid, 'the --stdio server, not the --no-socket one');
    await who.close();
    for (const c of [alone, sidecar]) c.child.stdin?.end();
    assert.deepEqual((await Promise.all([alone.exited, sidecar.exited])).map((e) => e.code), [0, 0]);
  });

  for (const variant of ['XDG_RUNTIME_DIR', 'TMPDIR'] as const) {
    // Every case through the checks serve and call run, in this process: serve's Service.listen on
    // its default socket, call's connect(); the symlink once more through the spawned serve and
    // call, under one variable (exit 1 and the message a user sees; the folder each variable gives
    // is defaultSocketFolder's, checked here for both).
    test(`a default folder under $${variant} that is a symlink, 0777 or 0775 is refused by serve and by call`, { timeout: TIMEOUT }, async (t) => {
      const base = tempDir();
      const env = { ...process.env, HERRSCHER_STATE_DIR: tempDir(), HERRSCHER_STATE_SOCKET: undefined, XDG_RUNTIME_DIR: undefined, TMPDIR: undefined, [variant]: base };
      const folder = path.join(base, variant === 'XDG_RUNTIME_DIR' ? 'herrscher-state' : `herrscher-state-${process.getuid?.()}`);
      const target = tempDir();
      symlinkSync(target, folder);
      assert.equal(defaultSocketFolder(env), folder, 'serve and call look in this folder');
      await assert.rejects(startServer(t, { socket: serveSocketOf({ env }) }), (err: unknown) => {
        assert.ok(err instanceof Error && /refusing socket folder .* it is a symbolic link/.test(err.message), String(err));
        return true;
      });
      await assert.rejects(connect({ env }), (err: unknown) => {
        assert.ok(err instanceof SocketError && /refusing socket folder .* it is a symbolic link/.test(err.message), String(err));
        return true;
      });
      if (variant === 'XDG_RUNTIME_DIR') {
        const [served, called] = await Promise.all([runToEnd(['serve'], { env }), runToEnd(['call', 'state/get'], { env })]);
        assert.equal(served.code, 1);
        assert.match(served.stderr, /refusing socket folder .* it is a symbolic link/);
        assert.equal(called.code, 1);
        assert.match(called.stderr, /refusing socket folder .* it is a symbolic link/);
      }
      assert.deepEqual(readdirSync(target), [], 'nothing was created through the link');

      for (const mode of [0o777, 0o775]) {
        const wide = path.join(tempDir(), 'x');
        const env2 = { ...env, [variant]: wide };
        const folder2 = path.join(wide, path.basename(folder));
        mkdirSync(folder2, { recursive: true });
        chmodSync(folder2, mode);
        assert.equal(defaultSocketFolder(env2), folder2, 'serve and call look in this folder');
        await assert.rejects(startServer(t, { socket: serveSocketOf({ env: env2 }) }), (err: unknown) => {
          assert.ok(err instanceof Error && err.message.includes(`its mode is 0${mode.toString(8)}, wider than 0700`), String(err));
          return true;
        });
        await assert.rejects(connect({ env: env2 }), (err: unknown) => {
          assert.ok(err instanceof SocketError && err.message.includes(`mode is 0${mode.toString(8)}`), String(err));
          return true;
        });
        assert.deepEqual(readdirSync(folder2), [], 'nothing was created in it');
      }
    });
  }

  /** A listener the test owns at `at`, counting the bytes anyone sends it (a squatter's socket). */
  async function squat(t: Ctx, at: string): Promise<{ received: () => number }> {
    let bytes = 0;
    const srv = net.createServer((s) => s.on('data', (c: Buffer) => (bytes += c.length)));
    await new Promise<void>((resolve) => srv.listen(at, resolve));
    t.after(() => new Promise<void>((resolve) => srv.close(() => resolve())));
    return { received: () => bytes };
  }

  test('a squatted default folder and a socket another user owns are refused unsent, exit 1', { timeout: TIMEOUT, skip: isRoot ? false : 'needs root to chown to nobody' }, async (t) => {
    // The squatter made our default folder before we did (in a shared /tmp).
    const tmp = tempDir();
    const env = { ...process.env, HERRSCHER_STATE_DIR: tempDir(), HERRSCHER_STATE_SOCKET: undefined, XDG_RUNTIME_DIR: undefined, TMPDIR: tmp };
    const folder = path.join(tmp, `herrscher-state-${process.getuid?.()}`);
    mkdirSync(folder, { mode: 0o700 });
    const sock = path.join(folder, 'herrscher-state.sock');
    const trap = await squat(t, sock);
    chownSync(sock, NOBODY, NOBODY);
    chownSync(folder, NOBODY, NOBODY);
    const r = await runToEnd(['call', 'transcript/append', '{"name":"main","entry":{"ts":"t","role":"user","text":"secret"}}'], { env });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /refusing socket folder .* belongs to uid 65534/);
    assert.equal(trap.received(), 0, 'nothing reached the squatter');

    // In a folder of ours, a socket another user owns: refused too.
    const mine = tempDir();
    const theirs = path.join(mine, 'their.sock');
    const trap2 = await squat(t, theirs);
    chownSync(theirs, NOBODY, NOBODY);
    // connect()'s refusal is what `call --socket` prints before it exits 1 (the call above exits 1
    // on the same kind of refusal).
    await assert.rejects(connect({ socket: theirs }), (err: unknown) => {
      assert.ok(err instanceof SocketError && err.code === 'EUNSAFE', String(err));
      assert.match(err.message, /refusing socket .*their\.sock: it belongs to uid 65534.*nothing was sent/);
      return true;
    });
    assert.equal(trap2.received(), 0);
  });

  test('a socket of ours in a folder others may write to is refused by connect()', { timeout: TIMEOUT }, async (t) => {
    const dir = path.join(tempDir(), 'shared');
    mkdirSync(dir);
    chmodSync(dir, 0o770);
    const at = path.join(dir, 's.sock');
    const trap = await squat(t, at);
    await assert.rejects(connect({ socket: at }), (err: unknown) => err instanceof SocketError && err.code === 'EUNSAFE' && /writable by others \(mode 0770\)/.test(err.message));
    assert.equal(trap.received(), 0);
  });

  /**
   * The CLI where nobody can read it: the build's files and its one external module copied into a folder
   * of mode 0755, since the checkout itself may sit under a folder only its owner may traverse
   * (a clone in `mktemp -d`).
   */
  let nobodysCli: string | undefined;
  function cliForNobody(): string {
    if (nobodysCli) return nobodysCli;
    const root = tempDirOthersCanReach();
    const cli = path.join(root, 'dist/src/cli.js');
    // The bin, the package.json that makes it CommonJS, the bundle it runs with its code cache, and the writer thread's worker.
    for (const f of ['cli.js', 'package.json', 'cli-main.js', 'cli-main.code-cache', 'writer-worker.cjs']) cpSync(path.join(path.dirname(CLI), f), path.join(root, 'dist/src', f));
    cpSync(path.join(REPO, 'node_modules/fs-ext-extra-prebuilt'), path.join(root, 'node_modules/fs-ext-extra-prebuilt'), { recursive: true });
    cpSync(path.join(REPO, 'package.json'), path.join(root, 'package.json'));
    return (nobodysCli = cli);
  }

  /** Runs the CLI as nobody (setpriv), with `env`. */
  function asNobody(t: Ctx, args: string[], env: NodeJS.ProcessEnv): Child {
    const child = spawnChild('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', process.execPath, cliForNobody(), ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
    t.after(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    return { child, pid: child.pid as number, exited, stdout: () => out, stderr: () => err };
  }

  test('two users each serve and call their own default server in one shared temp folder', { timeout: TIMEOUT, skip: isRoot ? false : 'needs root to run a server as nobody' }, async (t) => {
    const shared = tempDirOthersCanReach();
    chmodSync(shared, 0o1777); // as /tmp
    const mineState = tempDir();
    const theirState = path.join(shared, 'nobody-state');
    mkdirSync(theirState, { mode: 0o700 });
    chownSync(theirState, NOBODY, NOBODY);
    const base = { ...process.env, TMPDIR: shared, XDG_RUNTIME_DIR: undefined, HERRSCHER_STATE_SOCKET: undefined, HOME: shared };
    const mineEnv = { ...base, HERRSCHER_STATE_DIR: mineState };
    const theirEnv = { ...base, HERRSCHER_STATE_DIR: theirState };

    const mine = runCli(t, ['serve'], { env: mineEnv });
    const theirs = asNobody(t, ['serve'], theirEnv);
    await waitForSocket(path.join(shared, `herrscher-state-${process.getuid?.()}`, 'herrscher-state.sock'), mine);
    await waitForSocket(path.join(shared, `herrscher-state-${NOBODY}`, 'herrscher-state.sock'), theirs);

    // Our call is connect() with our environment, as the CLI's; theirs is the CLI run as nobody.
    const myClient = await connect({ env: mineEnv });
    assert.equal((await myClient.status()).pid, mine.pid);
    await myClient.close();
    const theirCall = asNobody(t, ['status', '--json'], theirEnv);
    theirCall.child.stdin?.end();
    assert.equal((await theirCall.exited).code, 0, theirCall.stderr());
    assert.equal((JSON.parse(theirCall.stdout()) as { pid: number; statePath: string }).pid, theirs.pid);

    await stop(mine);
    theirs.child.kill('SIGTERM');
    assert.equal((await theirs.exited).code, 0, theirs.stderr());
  });

  test('a client told --state A, with no server for A, never reaches the default socket served by B: call, status, socket, tail, sessions and connect() fail with "no server for A"', { timeout: SLOW }, async (t) => {
    const { env, runtime } = world();
    const dirA = tempDir('hs-a-');
    const dirB = tempDir('hs-b-');
    const stateA = path.join(dirA, 'state.json');
    const stateB = path.join(dirB, 'state.json');
    const server = runCli(t, ['serve', '--state', stateB], { env });
    await waitForSocket(path.join(runtime, 'herrscher-state', 'herrscher-state.sock'), server);
    // B's own write and read go through connect(): only A's refusals need the processes.
    const toB = await connect({ state: stateB, env });
    await toB.sessionAdd({ session: { name: 'main' } });

    const append = JSON.stringify({ name: 'main', entry: { ts: '2026-01-01T00:00:00Z', role: 'user', text: 'meant for A' } });
    const commands = [['call', 'transcript/append', append], ['status'], ['socket'], ['tail', 'main'], ['sessions']];
    // The five at once: each its own process, none of them may reach B.
    const results = await Promise.all(commands.map((args) => runToEnd([...args, '--state', stateA], { env })));
    for (const [i, r] of results.entries()) {
      const args = commands[i] as string[];
      assert.equal(r.code, 1, `${args[0]}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, new RegExp(`no server for ${stateA.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), args[0]);
      assert.equal(r.stdout, '', `${args[0]} printed nothing on stdout`);
    }
    await assert.rejects(connect({ state: stateA, env }), (err: unknown) => err instanceof SocketError && err.code === 'ENOSERVER' && /no server for/.test(err.message));
    assert.deepEqual((await toB.transcriptRead({ name: 'main' })).entries, [], 'nothing reached B');
    await toB.close();

    // The same state under another name (a symlinked folder) is the same server: connect() finds it
    // as every command does (the loop above shows each passes its --state on).
    const link = path.join(tempDir('hs-link-'), 'b');
    symlinkSync(dirB, link);
    const client = await connect({ state: path.join(link, 'state.json'), env });
    assert.deepEqual(await client.sessionList(), { sessions: [(await client.sessionFind({ name: 'main' })).session] });
    await client.close();
    await stop(server);
  });

  /** `serve --stdio` in `env`, a session/list over its stdio, then stdin EOF: its exit and stderr. */
  async function stdioAlone(t: Ctx, env: NodeJS.ProcessEnv): Promise<{ list: unknown; code: number | null; stderr: string }> {
    const server = runCli(t, ['serve', '--stdio', '--state', path.join(tempDir('hs-st-'), 'state.json')], { env, collectStdout: false });
    const rpc = new RawClient(server.child.stdout as NodeJS.ReadableStream, server.child.stdin as NodeJS.WritableStream, 'ndjson');
    const list = await rpc.call('session/list', {});
    rpc.end();
    const { code } = await server.exited;
    return { list, code, stderr: server.stderr() };
  }

  test('serve --stdio whose default socket folder another user made first ($TMPDIR/herrscher-state-<uid>) serves stdio alone with one warning', { timeout: SLOW }, async (t) => {
    const tmp = tempDir('hs-tmp-');
    const squatted = path.join(tmp, `herrscher-state-${process.getuid?.() ?? 'user'}`);
    mkdirSync(squatted);
    // Another user's folder where we can, else one others may write to: both are refused.
    if (isRoot) chownSync(squatted, NOBODY, NOBODY);
    chmodSync(squatted, 0o777);
    const r = await stdioAlone(t, { ...process.env, TMPDIR: tmp, XDG_RUNTIME_DIR: undefined, HERRSCHER_STATE_SOCKET: undefined });
    assert.deepEqual([r.list, r.code], [{ sessions: [] }, 0], r.stderr);
    assert.equal(r.stderr.match(/serving stdio alone/g)?.length, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`refusing socket folder ${squatted}`));
    assert.deepEqual(readdirSync(squatted), [], 'nothing was created in it');
  });

  test('serve --stdio with an inherited XDG_RUNTIME_DIR that is gone serves stdio alone with one warning', { timeout: SLOW }, async (t) => {
    const gone = path.join(tempDir('hs-run-'), 'gone');
    const r = await stdioAlone(t, { ...process.env, XDG_RUNTIME_DIR: gone, HERRSCHER_STATE_SOCKET: undefined });
    assert.deepEqual([r.list, r.code], [{ sessions: [] }, 0], r.stderr);
    assert.equal(r.stderr.match(/serving stdio alone/g)?.length, 1, r.stderr);
  });

  test('serve --socket in a sticky folder everyone may write (as /tmp) exits 1 naming the rule clients apply; nothing is created', { timeout: SLOW }, async () => {
    const sticky = tempDir('hs-sticky-');
    chmodSync(sticky, 0o1777);
    const { env } = world();
    const state = path.join(tempDir('hs-st-'), 'state.json');
    const r = await runToEnd(['serve', '--socket', path.join(sticky, 's.sock'), '--state', state], { env });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`its folder ${sticky} is writable by others \\(mode 01777\\)`));
    assert.match(r.stderr, /clients connect only to a socket in a folder of their user that no one else may write to/);
    assert.match(r.stderr, /mkdir -m 700/);
    assert.deepEqual(readdirSync(sticky), []);
    assert.equal(existsSync(state), false, 'the state was not created');
  });
});
