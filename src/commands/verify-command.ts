// `herrscher-state verify`: the command line of verify.ts.
import { defineCommand, UsageError } from './command.js';

export const verifyCommand = defineCommand({
  name: 'verify',
  summary: 'check a state dir or a backup without changing it; exit 1 on any problem',
  usage: ['verify [DIR | --state FILE]'],
  description:
    'Reads every file: state.json loads, every transcript and participants line is one its readers\n' +
    'take (Go\'s reader skips the others: verify names them), the side files (.herrscher-state/:\n' +
    'seq marks, transcript metas, write-ahead log) agree with the files they describe, and in a\n' +
    'backup every file matches backup-manifest.json (size and sha256; missing and extra files).\n' +
    'One line per problem, FILE:LINE: what, on stdout; exit 0 when there is none, 1 otherwise.\n' +
    'Never writes, never takes a lock: safe beside a running server (whose appends may then show\n' +
    'as a torn last line).',
  args: [{ name: 'DIR', help: 'a state dir or a backup folder (its state.json); default: --state, else as serve decides it' }],
  flags: {
    state: { type: 'string', value: 'FILE', help: 'the state.json to check, with its folder (default: as serve decides it)' },
  },
  examples: [
    { command: 'herrscher-state verify /var/backups/herrscher/2026-07-26', says: 'check a backup against its manifest' },
    { command: 'herrscher-state verify --state ~/.config/herrscher/state.json', says: 'check the live state dir' },
  ],
  async run(v, positionals) {
    if (positionals.length > 1 || (positionals.length === 1 && v.state !== undefined)) {
      throw new UsageError('verify takes one DIR or --state FILE, not both');
    }
    const { verify } = await import('./verify.js');
    return verify(positionals[0], v.state);
  },
});
