// `herrscher-state tail NAME`: the command line of tail.ts.
import { CLIENT_FLAGS, clientOptions } from './client-options.js';
import { defineCommand, UsageError } from './command.js';

export const tailCommand = defineCommand({
  name: 'tail',
  summary: "print a session's newest transcript entries, and follow new ones",
  usage: ['tail NAME [-n N] [-f [--no-reconnect]] [--json] [--raw] [--socket PATH | --state FILE] [--framing lsp|ndjson] [--timeout MS]'],
  description:
    'One line per entry: time, role, cost, text (continuation lines indented). Control characters,\n' +
    'escape sequences and bidi overrides in the text are printed escaped (\\x1b, \\u202e) unless --raw.\n' +
    'Exit 1 when NAME has no session. With -f: exit 0 on Ctrl-C or when the session is removed (said on\n' +
    'stderr). When the server goes away (a restart), -f says so on stderr, reconnects with backoff and\n' +
    'prints what was appended meanwhile, each entry once; --no-reconnect exits 1 instead.',
  args: [{ name: 'NAME', help: 'the session whose transcript to print' }],
  flags: {
    lines: { type: 'string', short: 'n', value: 'N', default: '20', help: 'how many of the newest entries' },
    follow: { type: 'boolean', short: 'f', help: 'then print new entries as they are appended (the change feed)' },
    json: { type: 'boolean', help: 'one JSON object per entry: {"seq":N,"entry":{…}}' },
    raw: { type: 'boolean', help: 'print the text as it is, control characters included' },
    'no-reconnect': { type: 'boolean', help: 'with -f: exit 1 when the server goes away instead of reconnecting' },
    ...CLIENT_FLAGS,
  },
  examples: [
    { command: 'herrscher-state tail main -n 50', says: 'the 50 newest entries of session main' },
    { command: 'herrscher-state tail main -f', says: 'the 20 newest, then each new entry as it is appended, until Ctrl-C' },
    { command: "herrscher-state tail main -n 0 -f --json | jq -r .entry.text", says: 'new entries as JSON, for a script' },
  ],
  async run(v, positionals) {
    const [name, ...extra] = positionals;
    if (!name || extra.length) throw new UsageError('tail needs exactly one NAME, e.g. herrscher-state tail main -n 50');
    const lines = Number(v.lines);
    if (!Number.isSafeInteger(lines) || lines < 0) throw new UsageError(`--lines must be a whole number, got ${JSON.stringify(v.lines)}`);
    const { tail } = await import('./tail.js');
    return tail(name, { lines, follow: v.follow ?? false, json: v.json ?? false, raw: v.raw ?? false, reconnect: !(v['no-reconnect'] ?? false) }, clientOptions(v));
  },
});
