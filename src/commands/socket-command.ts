// `herrscher-state socket`: the command line of socket.ts.
import { CLIENT_FLAGS, clientOptions } from './client-options.js';
import { defineCommand, UsageError } from './command.js';

export const socketCommand = defineCommand({
  name: 'socket',
  summary: 'print the socket of the running server; exit 1 when none answers',
  usage: ['socket [--state FILE | --socket PATH] [--framing lsp|ndjson] [--timeout MS]'],
  description:
    'Finds the server as call does ($HERRSCHER_STATE_SOCKET, else the socket the live server of\n' +
    'the state file recorded, else the shared server\'s socket when it exists, else the default\n' +
    'socket) and prints the path of the socket that answered (the state\'s own server\'s when\n' +
    'the shared server names it as the holder of the state\'s lock).',
  flags: { ...CLIENT_FLAGS },
  examples: [
    { command: 'herrscher-state socket', says: 'the socket of the server of the default state' },
    { command: 'bridge --socket "$(herrscher-state socket --state ~/h/state.json)"', says: 'hand the live socket to a bridge' },
  ],
  async run(v, positionals) {
    if (positionals.length) throw new UsageError(`socket takes no arguments, got ${JSON.stringify(positionals)}`);
    const { socket } = await import('./socket.js');
    return socket(clientOptions(v));
  },
});
