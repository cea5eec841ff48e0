// `herrscher-state tail NAME`: the command line of tail.ts.
import { CLIENT_FLAGS, clientOptions } from './client-options.js';
import { defineCommand, UsageError } from './command.js';
import { tail } from './tail.js';

export const tailCommand = defineCommand({
  name: 'tail',
  summary: "print a session's newest transcript entries, and follow new ones",
  usage: ['tail NAME [-n N] [-f] [--socket PATH]'],
  description: 'One line per entry: time, role, cost, text (continuation lines indented).',
  args: [{ name: 'NAME', help: 'the session whose transcript to print' }],
  flags: {
    lines: { type: 'string', short: 'n', value: 'N', default: '20', help: 'how many of the newest entries' },
    follow: { type: 'boolean', short: 'f', help: 'then print new entries as they are appended (the change feed)' },
    ...CLIENT_FLAGS,
  },
  examples: [
    { command: 'herrscher-state tail main -n 50', says: 'the 50 newest entries of session main' },
    { command: 'herrscher-state tail main -f', says: 'the 20 newest, then each new entry as it is appended, until Ctrl-C' },
  ],
  async run(v, positionals) {
    const [name, ...extra] = positionals;
    if (!name || extra.length) throw new UsageError('tail needs exactly one NAME, e.g. herrscher-state tail main -n 50');
    const lines = Number(v.lines);
    if (!Number.isSafeInteger(lines) || lines < 0) throw new UsageError(`--lines must be a whole number, got ${JSON.stringify(v.lines)}`);
    return tail(name, lines, v.follow ?? false, clientOptions(v));
  },
});
