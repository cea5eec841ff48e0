// `herrscher-state restore BACKUP --state FILE`: the command line of restore.ts.
import { defineCommand, UsageError } from './command.js';

export const restoreCommand = defineCommand({
  name: 'restore',
  summary: 'write a backup back as a new state dir that serve starts on',
  usage: ['restore BACKUP --state FILE'],
  description:
    'Verifies BACKUP (as verify does; any problem and nothing is written), then writes its files as\n' +
    'the state dir of FILE, with fresh side files that number each transcript as the original did.\n' +
    'The folder of FILE must not exist or be empty: a restore never overwrites a state dir, nor one\n' +
    'a server serves. Written beside it, synced, and renamed into place: all or nothing.',
  args: [{ name: 'BACKUP', help: 'a folder written by backup' }],
  flags: {
    state: { type: 'string', value: 'FILE', help: 'the state.json to create (required); its folder must not exist, or be empty' },
  },
  examples: [
    { command: 'herrscher-state restore /var/backups/herrscher/2026-07-26 --state ~/.config/herrscher-restored/state.json', says: 'restore into a new state dir' },
  ],
  async run(v, positionals) {
    if (positionals.length !== 1) throw new UsageError(`restore takes one argument, BACKUP; got ${JSON.stringify(positionals)}`);
    if (v.state === undefined) throw new UsageError('restore needs --state FILE: the state to create (it is never guessed)');
    const { restore } = await import('./restore.js');
    return restore(positionals[0] as string, v.state);
  },
});
