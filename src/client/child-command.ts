// How spawn() runs the server: which binary, which arguments, which environment and descriptors.
// Apart from spawn() so a test can describe a host (an Electron extension host) it is not.
import type { StdioOptions } from 'node:child_process';

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

/**
 * The command for `serve --stdio`: `node` when given, else this runtime's binary; inside Electron
 * that binary is Electron, which runs a script as Node only with ELECTRON_RUN_AS_NODE=1.
 */
export function childCommand(
  o: { state: string; cli: string; args?: string[]; env?: NodeJS.ProcessEnv; node?: string; lockFd?: number },
  runtime: HostRuntime = { execPath: process.execPath, electron: process.versions.electron },
): ChildCommand {
  const env = { ...(o.env ?? process.env) };
  if (!o.node && runtime.electron) env.ELECTRON_RUN_AS_NODE = '1';
  const lock = o.lockFd === undefined ? [] : ['--lock-fd', String(LOCK_FD_IN_CHILD)];
  return {
    command: o.node ?? runtime.execPath,
    args: [o.cli, 'serve', '--stdio', '--state', o.state, ...lock, ...(o.args ?? [])],
    env,
    stdio: o.lockFd === undefined ? ['pipe', 'pipe', 'inherit'] : ['pipe', 'pipe', 'inherit', o.lockFd],
  };
}
