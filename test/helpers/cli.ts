// Spawning the built CLI (dist/src/cli.js) as a real client would: `serve` over stdio or a unix
// socket, `call`, `--help`. Every child is killed when its test ends, and any survivor when the
// test file ends, so a failing test never leaves a server behind.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { atFileEnd } from './file-end.js';
import { tempDir } from './temp-dir.js';
import type { Framing } from './wire.js';
import { connectRaw, openSocket, RawClient } from './wire.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The built CLI; `npm run build` makes it. */
export const CLI = path.join(REPO, 'dist/src/cli.js');

/** The part of node:test's TestContext these helpers need. */
export interface Ctx {
  after(fn: () => void | Promise<void>): void;
}

const alive = new Set<ChildProcess>();

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Child {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Resolves when the process has exited and its output streams are drained. */
  readonly exited: Promise<Exit>;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Everything written to stdout so far (not collected for `serve --stdio`, whose stdout a RawClient reads). */
  stdout(): string;
}

function track(child: ChildProcess, t: Ctx | undefined, collectStdout: boolean): Child {
  alive.add(child);
  const err: Buffer[] = [];
  const out: Buffer[] = [];
  child.stderr?.on('data', (c: Buffer) => err.push(c));
  if (collectStdout) child.stdout?.on('data', (c: Buffer) => out.push(c));
  child.stdin?.on('error', () => undefined); // EPIPE after the child exited
  const exited = new Promise<Exit>((resolve) =>
    child.once('close', (code, signal) => {
      alive.delete(child);
      resolve({ code, signal });
    }),
  );
  const killIfAlive = (): void => {
    if (alive.has(child)) child.kill('SIGKILL');
  };
  t?.after(killIfAlive);
  atFileEnd(killIfAlive);
  return {
    child,
    pid: child.pid as number,
    exited,
    stderr: () => Buffer.concat(err).toString('utf8'),
    stdout: () => Buffer.concat(out).toString('utf8'),
  };
}

let runtimeDir: string | undefined;
/** A private XDG_RUNTIME_DIR per test file: `serve --stdio` also serves the default socket, which must never meet another file's. */
export function privateRuntimeDir(): string {
  if (runtimeDir === undefined) {
    runtimeDir = tempDir('hs-run-');
    atFileEnd(() => {
      runtimeDir = undefined;
    });
  }
  return runtimeDir;
}

/**
 * Runs the CLI with `args`, stdin piped; the test ends it (or it ends itself). `cli` runs another
 * copy of the bin than the build's, `nodeArgs` go to node before it.
 */
export function runCli(t: Ctx | undefined, args: string[], opts: { env?: NodeJS.ProcessEnv; collectStdout?: boolean; cli?: string; nodeArgs?: string[] } = {}): Child {
  const cli = opts.cli ?? CLI;
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run npm run build first`);
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), cli, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: opts.env ?? { ...process.env, HERRSCHER_STATE_DIR: undefined, HERRSCHER_STATE_SOCKET: undefined, XDG_RUNTIME_DIR: privateRuntimeDir() },
    cwd: REPO,
  });
  return track(child, t, opts.collectStdout ?? true);
}

/** Runs the CLI to completion: its exit and its whole output. */
export async function runToEnd(args: string[], opts: { env?: NodeJS.ProcessEnv } = {}): Promise<Exit & { stdout: string; stderr: string }> {
  const c = runCli(undefined, args, opts);
  c.child.stdin?.end();
  const exit = await c.exited;
  return { ...exit, stdout: c.stdout(), stderr: c.stderr() };
}

export interface StdioServer extends Child {
  /** A raw client on the server's stdin/stdout. */
  readonly rpc: RawClient;
}

/** `serve --stdio --state STATE …` with a raw client in the given framing on its stdio. */
export function serveStdio(t: Ctx, state: string, framing: Framing, args: string[] = []): StdioServer {
  const c = runCli(t, ['serve', '--stdio', '--state', state, ...args], { collectStdout: false });
  const rpc = new RawClient(c.child.stdout as NodeJS.ReadableStream, c.child.stdin as NodeJS.WritableStream, framing);
  return Object.assign(c, { rpc });
}

export interface SocketServer extends Child {
  readonly socket: string;
  /** A fresh raw connection to the server, destroyed when the test ends. */
  connect(framing: Framing): ReturnType<typeof connectRaw>;
}

/**
 * `serve --socket SOCKET --state STATE …`, resolved once the socket accepts a connection.
 * Polls connect(2): the server gives no readiness signal on a pipe we could wait on instead.
 */
export async function serveSocket(t: Ctx, state: string, socket: string, args: string[] = []): Promise<SocketServer> {
  const c = runCli(t, ['serve', '--socket', socket, '--state', state, ...args]);
  await waitForSocket(socket, c);
  return Object.assign(c, { socket, connect: (framing: Framing) => connectRaw(socket, framing, t) });
}

/** Resolves once `socket` accepts a connection; rejects when `server` exits first. */
export async function waitForSocket(socket: string, server: Child): Promise<void> {
  let exited: Exit | undefined;
  void server.exited.then((e) => (exited = e));
  for (;;) {
    if (exited) throw new Error(`the server exited (${JSON.stringify(exited)}) before listening; stderr:\n${server.stderr()}`);
    try {
      const s = await openSocket(socket);
      s.destroy();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

/** Resolves with the first match of `re` in the child's stderr; rejects when it exits first. */
export function waitForStderr(c: Child, re: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const m = re.exec(c.stderr());
      if (m) {
        c.child.stderr?.off('data', onData);
        resolve(m);
      }
      return m !== null;
    };
    // track() registered its collector first, so the chunk is already in stderr() here.
    const onData = (): void => void check();
    c.child.stderr?.on('data', onData);
    if (check()) return;
    void c.exited.then((e) => {
      if (!check()) reject(new Error(`exited (${JSON.stringify(e)}) before stderr matched ${re}; stderr:\n${c.stderr()}`));
    });
  });
}

/** Sends `shutdown`, then `exit`, and returns the exit: the orderly end a host performs. */
export async function shutdownAndExit(server: StdioServer): Promise<Exit> {
  const reply = await server.rpc.request('shutdown');
  if (reply.error || reply.result !== null) throw new Error(`shutdown failed: ${JSON.stringify(reply)}`);
  server.rpc.notify('exit');
  return server.exited;
}
