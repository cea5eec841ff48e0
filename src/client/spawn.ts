// spawn(): a server of the caller's own, started as a child and talked to over its stdio, as the
// host daemon does; a server that ends before it answers rejects every call with why (StartError).
import { spawn as spawnChild } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Framing } from '../transport/frame-decoder.js';
import { childCommand } from './child-command.js';
import { findCli, resolutionBases } from './cli-path.js';
import type { StateClient } from './client.js';
import { makeClient } from './make-client.js';
import { ClientCore } from './client-core.js';
import { START_ERROR_STDERR_LINES, StartError } from './client-errors.js';
import { Link } from './link.js';
import { stderrTail } from './stderr-tail.js';

export interface SpawnOptions {
  /** The state.json to serve. */
  state: string;
  /** More `serve` arguments (--durability, --log-level, --socket, --no-socket…). */
  args?: string[];
  framing?: Framing;
  /**
   * The CLI to run; default `require.resolve('herrscher-state/cli')` from this module, the bundle it
   * was bundled into, the main script or the working directory, first found.
   */
  cli?: string;
  env?: NodeJS.ProcessEnv;
  /**
   * The Node binary to run the CLI with. Default process.execPath; inside Electron (a VS Code
   * extension host) that is Electron itself, run with ELECTRON_RUN_AS_NODE=1 so it acts as Node.
   */
  node?: string;
  /**
   * An open descriptor of this process on the state's lock file (`<dir>/.<base>.lock`) through
   * which it holds the flock: handed to the server as its fd 3 with `--lock-fd 3`, so a host that
   * holds the lock can still spawn the server (docs/adoption.md).
   */
  lockFd?: number;
  /** A bound on every call, in ms (see ConnectOptions.callTimeoutMs). */
  callTimeoutMs?: number;
}

export interface SpawnedClient extends StateClient {
  readonly child: ChildProcess;
  /** Resolves with the exit code once the server has exited. */
  readonly exited: Promise<number | null>;
}

// import.meta is empty in a CommonJS bundle (esbuild) and absent from our CommonJS build.
const builtCli = (): string => findCli(resolutionBases(import.meta.url));

/** How long a server whose output ended may take to exit before its StartError is given without its exit code. */
const START_EXIT_WAIT_MS = 5000;
/** How long its stderr may stay open after its exit (a child of its own holding it) before the lines are read. */
const START_STDERR_WAIT_MS = 1000;

/**
 * Spawns `herrscher-state serve --stdio` as a child and talks to it over its stdio, as the host
 * does. Its stderr (the server's log) is passed on to this process's stderr. A server that exits
 * before it answers anything (it could not start) rejects every call with a StartError carrying
 * its exit code and the last lines it wrote to stderr.
 */
export function spawn(options: SpawnOptions): SpawnedClient {
  const cmd = childCommand({ ...options, cli: options.cli ?? builtCli() });
  const child = spawnChild(cmd.command, cmd.args, { stdio: cmd.stdio, env: cmd.env });
  const tail = stderrTail(child.stderr as NodeJS.ReadableStream, process.stderr, START_ERROR_STDERR_LINES);
  let startFailure: Error | undefined;
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (err) => {
      // Not started at all (no such binary, no permission): no exit follows.
      startFailure = err;
      resolve({ code: null, signal: null });
    });
  });
  const exited = ended.then(({ code }) => code);
  const explainEarlyEnd = async (reason: Error): Promise<Error> => {
    let timer: NodeJS.Timeout | undefined;
    const bound = (ms: number): Promise<undefined> => new Promise((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
    try {
      const end = await Promise.race([ended, bound(START_EXIT_WAIT_MS)]);
      clearTimeout(timer);
      if (!end) return reason; // still running: the connection broke, not the start
      await Promise.race([tail.ended, bound(START_STDERR_WAIT_MS)]);
      return startError(cmd.command, end, tail.lines(), startFailure);
    } finally {
      clearTimeout(timer);
    }
  };
  const link = new Link(child.stdout as NodeJS.ReadableStream, child.stdin as NodeJS.WritableStream, () => child.stdin?.end(), {
    framing: options.framing ?? 'lsp',
    explainEarlyEnd,
  });
  // A write to a server that already exited fails with EPIPE: the connection's end reports it.
  child.stdin?.on('error', () => undefined);
  const dial = (): Promise<Link> => Promise.reject(new Error('a spawned server is not reconnected'));
  const client = makeClient(new ClientCore(link, { dial, callTimeoutMs: options.callTimeoutMs, afterClose: () => exited.then(() => undefined) }), path.resolve(options.state));
  return Object.assign(client, { child, exited }) as SpawnedClient;
}

/** The StartError of a server that ended before it answered: how it ended, and its last words. */
function startError(command: string, end: { code: number | null; signal: NodeJS.Signals | null }, stderr: string[], notStarted: Error | undefined): StartError {
  const lines = stderr.filter((l) => l.trim() !== '');
  if (notStarted) return new StartError(`herrscher-state serve could not be started (${command}): ${notStarted.message}`, null, null, lines);
  const how = end.signal ? `was killed by ${end.signal}` : `exited with code ${end.code}`;
  const said = lines.length > 0 ? `: ${lines[lines.length - 1]}` : ' and wrote nothing to stderr';
  return new StartError(`herrscher-state serve ${how} before it answered${said}`, end.code, end.signal, lines);
}
