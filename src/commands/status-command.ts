// `herrscher-state status`: the command line of status.ts.
import { CLIENT_FLAGS, clientOptions } from './client-options.js';
import { defineCommand, UsageError } from './command.js';

export const statusCommand = defineCommand({
  name: 'status',
  summary: "the running server's health, identity and load; exit 1 when unhealthy",
  usage: ['status [--json] [--state FILE | --socket PATH] [--framing lsp|ndjson] [--timeout MS]'],
  description:
    'pid, uptime, version, state file, socket, durability, connections, subscriptions, revision,\n' +
    'write-ahead log bytes and the last storage error. Unhealthy (exit 1): a failing checkpoint,\n' +
    'a storage error in the last minute, or a state.json changed by hand that cannot be loaded.\n' +
    'Exit 1 too when no server answers.',
  flags: {
    json: { type: 'boolean', help: 'print the status method\'s result as JSON' },
    ...CLIENT_FLAGS,
  },
  examples: [
    { command: 'herrscher-state status', says: 'the server of the default state, found as call finds it' },
    { command: 'herrscher-state status --json --state ./dev/state.json', says: 'the server of ./dev/state.json, as JSON' },
  ],
  async run(v, positionals) {
    if (positionals.length) throw new UsageError(`status takes no arguments, got ${JSON.stringify(positionals)}`);
    const { status } = await import('./status.js');
    return status({ ...clientOptions(v), json: v.json ?? false });
  },
});
