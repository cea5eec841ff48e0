// `herrscher-state sessions`: the command line of the session table (tail.ts).
import { CLIENT_FLAGS, clientOptions } from './client-options.js';
import { defineCommand, UsageError } from './command.js';
import { sessions } from './tail.js';

export const sessionsCommand = defineCommand({
  name: 'sessions',
  summary: 'list the sessions: name, vendor, archived, last activity, entries, cost',
  usage: ['sessions [--socket PATH]'],
  description: 'One line per session, from session/infos.',
  flags: { ...CLIENT_FLAGS },
  examples: [{ command: 'herrscher-state sessions', says: 'the session table of the server on the default socket' }],
  async run(v, positionals) {
    if (positionals.length) throw new UsageError(`sessions takes no arguments, got ${JSON.stringify(positionals)}`);
    return sessions(clientOptions(v));
  },
});
