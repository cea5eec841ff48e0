#!/usr/bin/env node
// herrscher-state: parse the command line, run one command, exit. The commands live in
// src/commands/; this file only routes.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { call } from './commands/call.js';
import type { LogLevel } from './commands/logger.js';
import type { ClientOptions } from './commands/client-options.js';
import { LOG_LEVELS } from './commands/logger.js';
import { serve } from './commands/serve.js';
import { sessions, tail } from './commands/tail.js';
import { defaultStatePath } from './commands/state-path.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from './transport/limits.js';
import { defaultSocketPath } from './transport/socket.js';

function version(): string {
  // src/cli.ts (tsx) and dist/src/cli.js (built) sit at different depths below package.json.
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg)) return (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version;
  }
  return '0.0.0';
}

const HELP = `herrscher-state — the single writer of a Herrscher state dir, served over JSON-RPC

Usage:
  herrscher-state serve [--state FILE] [--stdio] [--socket PATH] [options]
  herrscher-state call METHOD [PARAMS-JSON] [--socket PATH] [--framing lsp|ndjson]
  herrscher-state tail NAME [-n N] [-f] [--socket PATH]
  herrscher-state sessions [--socket PATH]
  herrscher-state --help | --version

serve:
  --state FILE              state.json to own (default: $HERRSCHER_STATE_DIR/state.json,
                            else ~/.config/herrscher/state.json; now ${defaultStatePath()})
  --stdio                   serve the parent process on stdin/stdout (the host's sidecar)
  --socket PATH             serve clients on a unix socket (0600). With neither --stdio nor
                            --socket: ${defaultSocketPath()} (herrscher-state-<instanceID>.sock
                            when the state has an instance id)
  --durability sync|write   sync (default): answer a write once it is on disk (fdatasync);
                            write: once write(2) returned, as the Go package
  --max-message-bytes N     largest message accepted (default ${DEFAULT_MAX_MESSAGE_BYTES})
  --log-level LEVEL         ${LOG_LEVELS.join('|')} (default info); logs go to stderr
  --log-file FILE           write logs to FILE instead of stderr
  --announce                print where the server listens and a call line to try

call:
  METHOD                    e.g. state/get, session/list, transcript/read
  PARAMS-JSON               the params object, e.g. '{"name":"main","limit":20}'
  --socket PATH             the server's socket (default: $HERRSCHER_STATE_SOCKET, else
                            ${defaultSocketPath()})
  --framing lsp|ndjson      wire framing (default lsp)
  --timeout MS              how long to wait for the socket (default 2000)

tail:
  NAME                      the session whose transcript to print (time, role, cost, text)
  -n, --lines N             how many of the newest entries (default 20)
  -f, --follow              then print new entries as they are appended (the change feed)

sessions:                   one line per session: name, vendor, archived, last activity,
                            entries, cost (session/infos)

Methods and their params: herrscher-state call rpc.discover, or schema/openrpc.json.
`;

/** --socket, --framing and --timeout, shared by the commands that talk to a running server. */
function clientOptions(v: { socket?: string; framing?: string; timeout?: string }): ClientOptions {
  if (v.framing !== 'lsp' && v.framing !== 'ndjson') fail(`--framing must be lsp or ndjson, got ${JSON.stringify(v.framing)}`);
  const timeoutMs = Number(v.timeout);
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) fail(`--timeout must be a number of milliseconds, got ${JSON.stringify(v.timeout)}`);
  return { socket: v.socket ?? process.env.HERRSCHER_STATE_SOCKET, framing: v.framing, timeoutMs };
}

function fail(message: string): never {
  process.stderr.write(`herrscher-state: ${message}\nRun herrscher-state --help for usage.\n`);
  process.exit(2);
}

async function main(argv: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        state: { type: 'string' },
        stdio: { type: 'boolean' },
        socket: { type: 'string' },
        durability: { type: 'string', default: 'sync' },
        'max-message-bytes': { type: 'string', default: String(DEFAULT_MAX_MESSAGE_BYTES) },
        'log-level': { type: 'string', default: 'info' },
        'log-file': { type: 'string' },
        announce: { type: 'boolean' },
        framing: { type: 'string', default: 'lsp' },
        timeout: { type: 'string', default: '2000' },
        lines: { type: 'string', short: 'n', default: '20' },
        follow: { type: 'boolean', short: 'f' },
      },
    });
  } catch (err) {
    fail((err as Error).message);
  }
  const { values: v, positionals } = parsed;
  if (v.help) {
    process.stdout.write(HELP);
    return;
  }
  if (v.version) {
    process.stdout.write(`${version()}\n`);
    return;
  }
  const [command, ...rest] = positionals;
  switch (command) {
    case 'serve': {
      if (rest.length) fail(`serve takes no positional arguments, got ${JSON.stringify(rest)}`);
      if (v.durability !== 'sync' && v.durability !== 'write') fail(`--durability must be sync or write, got ${JSON.stringify(v.durability)}`);
      const max = Number(v['max-message-bytes']);
      if (!Number.isSafeInteger(max) || max < 1024) fail(`--max-message-bytes must be an integer >= 1024, got ${JSON.stringify(v['max-message-bytes'])}`);
      const level = v['log-level'] as LogLevel;
      if (!LOG_LEVELS.includes(level)) fail(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
      await serve({
        state: v.state ?? defaultStatePath(),
        stdio: v.stdio ?? false,
        socket: v.socket,
        durability: v.durability,
        maxMessageBytes: max,
        logLevel: level,
        logFile: v['log-file'],
        announce: v.announce ?? false,
        version: version(),
      });
      return;
    }
    case 'call': {
      const [method, params, ...extra] = rest;
      if (!method) fail('call needs a METHOD, e.g. herrscher-state call state/get');
      if (extra.length) fail(`call takes METHOD and one PARAMS-JSON, got extra ${JSON.stringify(extra)}`);
      process.exitCode = await call({ method, params, ...clientOptions(v) });
      return;
    }
    case 'tail':
    case 'sessions': {
      const client = clientOptions(v);
      try {
        if (command === 'sessions') {
          if (rest.length) fail(`sessions takes no arguments, got ${JSON.stringify(rest)}`);
          process.exitCode = await sessions(client);
        } else {
          const [name, ...extra] = rest;
          if (!name || extra.length) fail('tail needs exactly one NAME, e.g. herrscher-state tail main -n 50');
          const lines = Number(v.lines);
          if (!Number.isSafeInteger(lines) || lines < 0) fail(`--lines must be a whole number, got ${JSON.stringify(v.lines)}`);
          process.exitCode = await tail(name, lines, v.follow ?? false, client);
        }
      } catch (err) {
        process.stderr.write(`herrscher-state ${command}: ${(err as Error).message}\n`);
        process.exitCode = 1;
      }
      return;
    }
    case undefined:
      process.stdout.write(HELP);
      process.exitCode = 2;
      return;
    default:
      fail(`unknown command ${JSON.stringify(command)}`);
  }
}

await main(process.argv.slice(2));
