// `herrscher-state sessions`: the command line of the session table (tail.ts).
import { CLIENT_FLAGS, clientOptions } from './client-options.js';
import { defineCommand, UsageError } from './command.js';

export const sessionsCommand = defineCommand({
  name: 'sessions',
  summary: 'list the sessions: name, vendor, archived, last activity, entries, cost',
  usage: ['sessions [--json] [--raw] [--socket PATH | --state FILE] [--framing lsp|ndjson] [--timeout MS]'],
  description: 'One line per session, from session/infos; text from the files printed escaped unless --raw.',
  flags: {
    json: { type: 'boolean', help: 'the session/infos result as JSON: {"sessions":[{session, lastTs, usage}…]}' },
    raw: { type: 'boolean', help: 'print the fields as they are, control characters included' },
    ...CLIENT_FLAGS,
  },
  examples: [
    { command: 'herrscher-state sessions', says: 'the session table of the server on the default socket' },
    { command: "herrscher-state sessions --json | jq -r '.sessions[].session.name'", says: 'the names, for a script' },
  ],
  async run(v, positionals) {
    if (positionals.length) throw new UsageError(`sessions takes no arguments, got ${JSON.stringify(positionals)}`);
    const { sessions } = await import('./tail.js');
    return sessions({ ...clientOptions(v), json: v.json ?? false, raw: v.raw ?? false });
  },
});
