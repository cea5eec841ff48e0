// How spawn() runs the server: which binary, which arguments, which environment and descriptors.
// Apart from spawn() so a test can describe a host (an Electron extension host) it is not.
import type { StdioOptions } from 'node:child_process';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

/** The runtime spawn() runs in: its binary and, inside Electron, Electron's version. */
export interface HostRuntime {
  execPath: string;
  electron?: string;
}

export interface ChildCommand {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  stdio: StdioOptions;
}

/** The fd number the server gets the host's lock descriptor as (Go's cmd.ExtraFiles[0] is 3 too). */
export const LOCK_FD_IN_CHILD = 3;

/** The oldest Node the server runs on (package.json `engines`). */
const MIN_NODE_MAJOR = 20;

/**
 * The first `node` on `env.PATH` that is Node 20 or later, or undefined. Asks each candidate its
 * version (`node --version`, ~40 ms, once per spawn inside Electron only): an old Node on PATH
 * would fail the server where Electron's own might not.
 */
export function nodeOnPath(env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir || !path.isAbsolute(dir)) continue; // a relative PATH entry depends on the cwd: never trusted
    const candidate = path.join(dir, 'node');
    try {
      accessSync(candidate, constants.X_OK);
      if (!statSync(candidate).isFile()) continue;
    } catch {
      continue;
    }
    const r = spawnSync(candidate, ['--version'], { encoding: 'utf8', timeout: 5000, env: { PATH: env.PATH } });
    const major = /^v(\d+)\./.exec(r.stdout ?? '')?.[1];
    if (r.status === 0 && major !== undefined && Number(major) >= MIN_NODE_MAJOR) return candidate;
  }
  return undefined;
}

/**
 * The command for `serve --stdio`: `node` when given; else outside Electron this runtime's binary;
 * inside Electron (a VS Code extension host) a Node 20+ on PATH, whose ABI the prebuilt flock
 * binding has, else Electron itself run as Node (ELECTRON_RUN_AS_NODE=1), which loads the binding
 * only for the Electron versions it ships a binary for (the server then says so and exits).
 */
export function childCommand(
  o: { state: string; cli: string; args?: string[]; env?: NodeJS.ProcessEnv; node?: string; lockFd?: number },
  runtime: HostRuntime = { execPath: process.execPath, electron: process.versions.electron },
  findNode: (env: NodeJS.ProcessEnv) => string | undefined = nodeOnPath,
): ChildCommand {
  const env = { ...(o.env ?? process.env) };
  let command = o.node ?? runtime.execPath;
  if (!o.node && runtime.electron) {
    const node = findNode(env);
    if (node) {
      command = node;
      delete env.ELECTRON_RUN_AS_NODE; // a real Node ignores it; the server's own children must not inherit it
    } else {
      env.ELECTRON_RUN_AS_NODE = '1';
    }
  }
  const lock = o.lockFd === undefined ? [] : ['--lock-fd', String(LOCK_FD_IN_CHILD)];
  return {
    command,
    args: [o.cli, 'serve', '--stdio', '--state', o.state, ...lock, ...(o.args ?? [])],
    env,
    // stderr piped: spawn() passes it on and keeps its last lines for a StartError.
    stdio: o.lockFd === undefined ? ['pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe', o.lockFd],
  };
}
