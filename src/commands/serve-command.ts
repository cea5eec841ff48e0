// `herrscher-state serve`: the command line of the server (serve.ts runs it).
import { DEFAULT_MAX_MESSAGE_BYTES } from '../transport/limits.js';
import { defaultSocketPath, sharedSocketPath } from '../transport/socket.js';
import { defineCommand, UsageError } from './command.js';
import { parentPidAtStart, watchParent } from './parent-watch.js';
import type { LogFormat, LogLevel } from './log-options.js';
import { LOG_FORMATS, LOG_LEVELS } from './log-options.js';
import { defaultStatePath } from './state-path.js';
import { version } from './version.js';
import { DEFAULT_STATE_IDLE_MS } from '../server/shared-defaults.js';

/** How often --exit-with-parent looks whether the parent is still there (and once at the start). */
const PARENT_POLL_MS = 500;

/** A --flag of milliseconds: a whole number from 1 to setTimeout's most. */
function milliseconds(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = Number(value);
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > 2 ** 31 - 1) {
    throw new UsageError(`${flag} must be a whole number of milliseconds from 1 to 2147483647, got ${JSON.stringify(value)}`);
  }
  return ms;
}

export const serveCommand = defineCommand({
  name: 'serve',
  summary: 'own a state dir and serve it on stdio and/or a unix socket',
  usage: ['serve [--state FILE] [--stdio] [--socket PATH] [options]', 'serve --shared [--socket PATH] [--exit-when-idle MS] [--state-idle-ms MS] [options]'],
  description:
    'Takes the state\'s single-writer lock (<dir>/.herrscher-state/server.lock), so one process\n' +
    'writes it; Herrscher\'s daemon lock (<dir>/.<base>.lock) only when handed over (--lock-fd).\n' +
    'Stops in order (answers what it received, finishes writes, removes its socket) on stdin EOF\n' +
    'in --stdio mode, on the exit notification, on SIGTERM, SIGINT or SIGHUP, and with exit 0\n' +
    'when its state dir is removed.\n\n' +
    '--shared: the per-user shared server. One process serves any number of state files, each\n' +
    'with its own single writer and lock: a connection names its state in initialize\'s `state`\n' +
    '(else the default state), which is opened on first use and dropped once unused for\n' +
    '--state-idle-ms or when its folder is removed. It writes no server record and no file per\n' +
    'state; a second one on the same socket exits with 4 at once.',
  flags: {
    state: {
      type: 'string',
      value: 'FILE',
      help: `state.json to own (default: $HERRSCHER_STATE_DIR/state.json,\nelse ~/.config/herrscher/state.json; now ${defaultStatePath()})`,
    },
    stdio: { type: 'boolean', help: "serve the parent process on stdin/stdout (the host's sidecar)" },
    socket: {
      type: 'string',
      value: 'PATH',
      help: `serve clients on a unix socket (0600). Default: $HERRSCHER_STATE_SOCKET,\nelse ${defaultSocketPath()}\n(herrscher-state-<instanceID>.sock when the state has an instance id), also with --stdio`,
    },
    'no-socket': { type: 'boolean', help: 'with --stdio: serve stdio alone, no socket' },
    shared: {
      type: 'boolean',
      help: `the per-user shared server: any number of state files on one socket,\n${sharedSocketPath()} unless --socket (never with --state,\n--stdio, --no-socket or --lock-fd)`,
    },
    'state-idle-ms': {
      type: 'string',
      value: 'MS',
      help: `with --shared: close a state no connection has used for MS milliseconds\n(default ${DEFAULT_STATE_IDLE_MS})`,
    },
    'lock-fd': {
      type: 'string',
      value: 'N',
      help: 'the host holds Herrscher\'s daemon lock and passes its open lock file\n(<dir>/.<base>.lock) as descriptor N, e.g. Go\'s cmd.ExtraFiles: 3; held too until exit',
    },
    durability: {
      type: 'string',
      value: 'sync|write',
      default: 'sync',
      help: 'sync: answer a write once it is on disk (fdatasync);\nwrite: once write(2) returned, as the Go package',
    },
    'max-message-bytes': { type: 'string', value: 'N', default: String(DEFAULT_MAX_MESSAGE_BYTES), help: 'largest message accepted' },
    'log-level': { type: 'string', value: 'LEVEL', default: 'info', help: LOG_LEVELS.join('|') },
    'log-file': { type: 'string', value: 'FILE', help: 'write logs to FILE (created 0600) instead of stderr' },
    'log-format': {
      type: 'string',
      value: 'auto|json|pretty',
      default: 'auto',
      help: 'pretty: one human line per event; json: one JSON object per line;\nauto: pretty when stderr is a terminal, else json',
    },
    announce: { type: 'boolean', help: 'print where the server listens and a call line to try' },
    'exit-with-parent': {
      type: 'boolean',
      help: 'stop in order once the process that started it is gone, even if it died\nwithout a signal to pass on (`npm start` uses it)',
    },
    'parent-pid': {
      type: 'string',
      value: 'PID',
      help: 'the parent --exit-with-parent watches (implies it): the host passes its own pid,\nso a host that dies before the server has started is noticed too',
    },
    'exit-when-idle': {
      type: 'string',
      value: 'MS',
      help: 'stop in order (as on SIGTERM) once no connection has been open and no\nrequest in flight for MS milliseconds, releasing the lock',
    },
  },
  examples: [
    { command: 'herrscher-state serve --stdio', says: "a host's sidecar: JSON-RPC on stdin/stdout, the default state dir, and the default socket for its bridges" },
    { command: 'herrscher-state serve --stdio --state ~/.config/herrscher/state.json --lock-fd 3', says: 'spawned by a host that holds the flock and passes its lock file as fd 3' },
    { command: 'herrscher-state serve --state ./dev/state.json --socket ./dev/s.sock --announce', says: 'a scratch state dir for trying things, served on a socket in it' },
    { command: 'herrscher-state serve --shared --exit-when-idle 2000', says: 'the per-user shared server the Go drop-in starts: every state file on one socket, stopping once unused for 2 s' },
    { command: 'herrscher-state serve --exit-when-idle 300', says: 'started for a process that does not hold the lock: stops and releases it once unused for 300 ms' },
  ],
  async run(v, positionals) {
    if (positionals.length) throw new UsageError(`serve takes no positional arguments, got ${JSON.stringify(positionals)}`);
    if (v.durability !== 'sync' && v.durability !== 'write') throw new UsageError(`--durability must be sync or write, got ${JSON.stringify(v.durability)}`);
    const max = Number(v['max-message-bytes']);
    if (!Number.isSafeInteger(max) || max < 1024) throw new UsageError(`--max-message-bytes must be an integer >= 1024, got ${JSON.stringify(v['max-message-bytes'])}`);
    const level = v['log-level'] as LogLevel;
    if (!LOG_LEVELS.includes(level)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
    if (v['no-socket'] && !v.stdio) throw new UsageError('--no-socket needs --stdio (without either there would be nothing to serve)');
    if (v['no-socket'] && v.socket) throw new UsageError('--no-socket and --socket contradict each other');
    const lockFd = v['lock-fd'] === undefined ? undefined : Number(v['lock-fd']);
    if (lockFd !== undefined && (!Number.isSafeInteger(lockFd) || lockFd < 3)) {
      throw new UsageError(`--lock-fd must be a descriptor number >= 3 (0-2 are stdio), got ${JSON.stringify(v['lock-fd'])}`);
    }
    const idleMs = milliseconds(v['exit-when-idle'], '--exit-when-idle');
    const stateIdleMs = milliseconds(v['state-idle-ms'], '--state-idle-ms');
    if (v.shared) {
      for (const flag of ['state', 'stdio', 'no-socket', 'lock-fd', 'exit-with-parent', 'parent-pid', 'announce'] as const) {
        if (v[flag] !== undefined && v[flag] !== false) throw new UsageError(`--shared serves any state a client names and is started detached: it takes no --${flag}`);
      }
    } else if (stateIdleMs !== undefined) {
      throw new UsageError('--state-idle-ms needs --shared (a dedicated server serves its one state until it stops)');
    }
    const parentPid = v['parent-pid'] === undefined ? undefined : Number(v['parent-pid']);
    if (parentPid !== undefined && (!Number.isSafeInteger(parentPid) || parentPid < 1)) {
      throw new UsageError(`--parent-pid must be a process id (a whole number >= 1), got ${JSON.stringify(v['parent-pid'])}`);
    }
    // Started before serve.js loads (the server, the store, pino): the parent is checked at once.
    const parent = v['exit-with-parent'] || parentPid !== undefined ? watchParent(parentPid ?? parentPidAtStart(), PARENT_POLL_MS) : undefined;
    const format = v['log-format'] as LogFormat;
    if (!LOG_FORMATS.includes(format)) throw new UsageError(`--log-format must be one of ${LOG_FORMATS.join(', ')}, got ${JSON.stringify(format)}`);
    if (v.shared) {
      const { serveShared } = await import('./serve-shared.js');
      await serveShared({
        socket: v.socket,
        durability: v.durability,
        maxMessageBytes: max,
        logLevel: level,
        logFile: v['log-file'],
        logFormat: format,
        ...(idleMs !== undefined ? { exitWhenIdleMs: idleMs } : {}),
        ...(stateIdleMs !== undefined ? { stateIdleMs } : {}),
        version: version(),
      });
      return 0;
    }
    const { serve } = await import('./serve.js');
    await serve({
      state: v.state ?? defaultStatePath(),
      stdio: v.stdio ?? false,
      socket: v.socket,
      noSocket: v['no-socket'] ?? false,
      lockFd,
      durability: v.durability,
      maxMessageBytes: max,
      logLevel: level,
      logFile: v['log-file'],
      logFormat: format,
      announce: v.announce ?? false,
      ...(parent ? { parent } : {}),
      ...(idleMs !== undefined ? { exitWhenIdleMs: idleMs } : {}),
      version: version(),
    });
    // serve() returns once listening; the process lives on until a stop calls process.exit(code).
    return 0;
  },
});
