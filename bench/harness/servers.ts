// Starting, watching and stopping the processes a bench measures: our built server and the bare
// vscode-jsonrpc echo server, on a unix socket or on stdio. Each is stopped the way a host stops
// it (SIGTERM, or stdin EOF) so --cpu-prof can write its profile; anything left when the bench
// exits is killed by pid, so a failed bench never leaves a server running.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { CLI, ECHO_SERVER, PROFILE, PROFILE_DIR, REPO } from './config.js';
import type { Rpc } from './rpc.js';
import { rpcOverStdio } from './rpc.js';

const alive = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of alive) child.kill('SIGKILL');
});

/** Clock ticks per second of /proc/<pid>/stat; 100 on every Linux this runs on (getconf CLK_TCK). */
const CLK_TCK = 100;

export interface Proc {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  stderr(): string;
  /**
   * VmRSS and VmHWM (peak) in MB, read from /proc; what the RSS target is about. VmRSS is anonMB
   * (the process's own memory) plus fileMB (pages of mapped files, mostly node's binary, shared
   * with every node process and dropped or kept by the kernel's page reclaim, not by us).
   */
  memory(): { rssMB: number; hwmMB: number; anonMB: number; fileMB: number };
  /** User + system CPU seconds the process has used so far. */
  cpuSeconds(): number;
  /** Orderly stop (SIGTERM or stdin EOF), SIGKILL after 10 s; resolves once it has exited. */
  stop(): Promise<void>;
}

export interface SocketProc extends Proc {
  readonly socket: string;
}

export interface StdioProc extends Proc {
  readonly rpc: Rpc;
}

/** User + system CPU seconds from a /proc stat file: a process's (/proc/PID/stat) or one thread's (/proc/PID/task/TID/stat). */
export function cpuSecondsOf(statFile: string): number {
  // Fields after the ")" that ends comm; utime and stime are fields 14 and 15 of the line.
  const stat = readFileSync(statFile, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

let profileSeq = 0;

/**
 * Node flags for our server: --cpu-prof when BENCH_PROFILE=1, one folder per server start. Node
 * names the files: one per thread (the main thread's has thread id 0 in its name, the writer
 * thread's another), so the writer thread's profile never overwrites the main thread's.
 */
function nodeFlags(name: string): string[] {
  if (!PROFILE) return [];
  return ['--cpu-prof', '--cpu-prof-dir', path.join(PROFILE_DIR, `${name}.${++profileSeq}`)];
}

function track(name: string, child: ChildProcess, orderly: () => void): Proc {
  alive.add(child);
  const err: Buffer[] = [];
  child.stderr?.on('data', (c: Buffer) => {
    err.push(c);
    // Our server runs at --log-level warn: anything it says is worth seeing while the bench runs.
    process.stderr.write(`[${name}] ${c.toString('utf8')}`);
  });
  child.stdin?.on('error', () => undefined); // EPIPE once the child has gone
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      alive.delete(child);
      resolve();
    }),
  );
  const pid = child.pid as number;
  return {
    name,
    pid,
    child,
    stderr: () => Buffer.concat(err).toString('utf8'),
    memory: () => {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
      return { rssMB: kb('VmRSS') / 1024, hwmMB: kb('VmHWM') / 1024, anonMB: kb('RssAnon') / 1024, fileMB: kb('RssFile') / 1024 };
    },
    cpuSeconds: () => cpuSecondsOf(`/proc/${pid}/stat`),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      orderly();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resolves once `socket` accepts a connection; rejects when the process exits first or after 10 s. */
async function waitForSocket(socket: string, proc: Proc): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`${proc.name} exited (${proc.child.exitCode ?? proc.child.signalCode}) before listening:\n${proc.stderr()}`);
    }
    if (Date.now() > deadline) throw new Error(`${proc.name} did not listen on ${socket} within 10 s:\n${proc.stderr()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(socket);
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
}

export type Durability = 'sync' | 'write';

/**
 * `serve --socket` on `state`, at --log-level warn so logging costs what it costs in production.
 * `cli` runs another bundle than the build (bench/bounds.ts), with `env` added to the bench's.
 */
export async function startServer(
  name: string,
  state: string,
  socket: string,
  durability: Durability,
  { cli = CLI, env }: { cli?: string; env?: Record<string, string> } = {},
): Promise<SocketProc> {
  assertBuilt();
  const args = [...nodeFlags(name), cli, 'serve', '--state', state, '--socket', socket, '--durability', durability, '--log-level', 'warn'];
  const child = spawn(process.execPath, args, { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  const proc = track(name, child, () => child.kill('SIGTERM'));
  await waitForSocket(socket, proc);
  return Object.assign(proc, { socket });
}

/** `serve --shared --socket` (the per-user shared server), keeping every state open for the whole bench. */
export async function startShared(name: string, socket: string, durability: Durability): Promise<SocketProc> {
  assertBuilt();
  const args = [...nodeFlags(name), CLI, 'serve', '--shared', '--socket', socket, '--durability', durability, '--log-level', 'warn', '--state-idle-ms', String(2 ** 31 - 1)];
  const child = spawn(process.execPath, args, { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] });
  const proc = track(name, child, () => child.kill('SIGTERM'));
  await waitForSocket(socket, proc);
  return Object.assign(proc, { socket });
}

/** The bare vscode-jsonrpc echo server on a unix socket. */
export async function startEcho(name: string, socket: string): Promise<SocketProc> {
  const child = spawn(process.execPath, [ECHO_SERVER, '--socket', socket], { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] });
  const proc = track(name, child, () => child.kill('SIGTERM'));
  await waitForSocket(socket, proc);
  return Object.assign(proc, { socket });
}

/**
 * `serve --stdio` with an Rpc on its stdin/stdout, as a host runs its sidecar. `profile: false`
 * keeps --cpu-prof out of a start-up time measurement.
 */
export function startServerStdio(name: string, state: string, durability: Durability, profile = true): StdioProc {
  assertBuilt();
  const args = [...(profile ? nodeFlags(name) : []), CLI, 'serve', '--stdio', '--state', state, '--durability', durability, '--log-level', 'warn'];
  return stdioProc(name, spawn(process.execPath, args, { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] }));
}

/** The bare vscode-jsonrpc echo server on stdio. */
export function startEchoStdio(name: string): StdioProc {
  return stdioProc(name, spawn(process.execPath, [ECHO_SERVER, '--stdio'], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] }));
}

function stdioProc(name: string, child: ChildProcess): StdioProc {
  const rpc = rpcOverStdio(child.stdout as NodeJS.ReadableStream, child.stdin as NodeJS.WritableStream);
  const proc = track(name, child, () => void rpc.close());
  return Object.assign(proc, { rpc });
}
