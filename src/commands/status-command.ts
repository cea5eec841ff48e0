// `herrscher-state status`: the command line of status.ts.
import { CLIENT_FLAGS, clientOptions } from './client-options.js';
import { defineCommand, UsageError } from './command.js';

export const statusCommand = defineCommand({
  name: 'status',
  summary: "the running server's health, identity and load; exit 1 when unhealthy",
  usage: ['status [--json] [--state FILE | --socket PATH] [--framing lsp|ndjson] [--timeout MS]'],
  description:
    'pid, uptime, version, state file, socket, durability, connections, subscriptions, revision,\n' +
    'write-ahead log bytes, the last storage error and counters since the start (calls and errors\n' +
    'per method, write latency p50/p99, fsyncs, compactions; all of them with --json). Unhealthy\n' +
    '(exit 1): a failing checkpoint, a storage error in the last minute, a state.json changed by\n' +
    'hand that cannot be loaded, or stopping. Exit 1 too when no server answers, or none within\n' +
    '--timeout MS, which bounds the whole check: a supervisor\'s health check.',
  flags: {
    json: { type: 'boolean', help: 'print the status method\'s result as JSON; no answer:\n{"healthy": false, "error": "…"}' },
    ...CLIENT_FLAGS,
  },
  examples: [
    { command: 'herrscher-state status', says: 'the server of the default state, found as call finds it' },
    { command: 'herrscher-state status --json --state ./dev/state.json', says: 'the server of ./dev/state.json, as JSON' },
    { command: 'herrscher-state status --socket "$XDG_RUNTIME_DIR/herrscher-state/herrscher-state.sock" --timeout 2000', says: 'a health check: exit 0 healthy, 1 otherwise, within 2 s' },
  ],
  async run(v, positionals) {
    if (positionals.length) throw new UsageError(`status takes no arguments, got ${JSON.stringify(positionals)}`);
    const { status } = await import('./status.js');
    return status({ ...clientOptions(v), json: v.json ?? false });
  },
});
