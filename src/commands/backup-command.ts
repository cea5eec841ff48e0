// `herrscher-state backup DEST`: the command line of backup.ts.
import { CLIENT_FLAGS, clientOptions } from './client-options.js';
import { defineCommand, UsageError } from './command.js';

export const backupCommand = defineCommand({
  name: 'backup',
  summary: 'a consistent copy of the state dir at one revision, taken while the server serves',
  usage: ['backup DEST [--json] [--state FILE | --socket PATH] [--framing lsp|ndjson] [--timeout MS]'],
  description:
    'Asks the running server to write a copy of its state dir into DEST: state.json, transcripts/\n' +
    'and participants/ as they stood at one revision (every write answered before it, none after),\n' +
    'fsynced, with backup-manifest.json (revision, epoch, sha256 and size of each file). Writes wait\n' +
    'only while the copy is fixed, reads never. With no server running, the state dir is copied\n' +
    'under the server\'s lock (no server can start meanwhile): no server run, so no revision (it\n' +
    'says offline). DEST must not exist or be an empty folder, outside the state dir. Check it\n' +
    'with verify, bring it back with restore.',
  args: [{ name: 'DEST', help: 'the folder to write the backup into (created; must not exist, or be empty)' }],
  flags: {
    json: { type: 'boolean', help: 'print the result (dest, revision, epoch, createdAt, files, bytes, offline) as JSON; offline: revision and epoch null' },
    ...CLIENT_FLAGS,
  },
  examples: [
    { command: 'herrscher-state backup /var/backups/herrscher/$(date +%F)', says: 'back up the default state into a dated folder' },
    { command: 'herrscher-state backup ./bk --state ./dev/state.json', says: 'back up the state of ./dev (its server, or the files when none runs)' },
  ],
  async run(v, positionals) {
    if (positionals.length !== 1) throw new UsageError(`backup takes one argument, DEST; got ${JSON.stringify(positionals)}`);
    const { backup } = await import('./backup.js');
    return backup({ ...clientOptions(v), json: v.json ?? false, dest: positionals[0] as string });
  },
});
