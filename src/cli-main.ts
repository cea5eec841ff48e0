// herrscher-state: route the command line to one command, run it, exit. Each command is defined in
// src/commands/<name>-command.ts (help, flags, examples, run); adding one is a line in COMMANDS.
// The build bundles this file into dist/src/cli-main.js, which src/cli.ts (the bin) starts.
// A command's definition (help, flags) is all that loads here; its `run` imports what it runs
// (`await import('./serve.js')`), which the bundle evaluates only then: `--help` and the client
// commands never build the server, the store, pino or the protocol's zod schemas (a third of a
// start's CPU beyond node's own).
import { backupCommand } from './commands/backup-command.js';
import { callCommand } from './commands/call-command.js';
import { codeCacheDamaged } from './commands/code-cache.js';
import type { Command } from './commands/command.js';
import { EXIT, UsageError } from './commands/command.js';
import { parseCommandLine } from './commands/command-line.js';
import { commandHelp, globalHelp } from './commands/help.js';
import { restoreCommand } from './commands/restore-command.js';
import { serveCommand } from './commands/serve-command.js';
import { sessionsCommand } from './commands/sessions-command.js';
import { socketCommand } from './commands/socket-command.js';
import { statusCommand } from './commands/status-command.js';
import { suggest } from './commands/suggest.js';
import { tailCommand } from './commands/tail-command.js';
import { verifyCommand } from './commands/verify-command.js';
import { version } from './commands/version.js';

const COMMANDS: readonly Command[] = [
  serveCommand, callCommand, tailCommand, sessionsCommand, statusCommand, socketCommand, backupCommand, verifyCommand, restoreCommand,
];

function usageError(message: string, cmd?: Command): number {
  const prefix = cmd ? `herrscher-state ${cmd.name}` : 'herrscher-state';
  process.stderr.write(`${prefix}: ${message}\nRun ${prefix} --help for usage.\n`);
  return EXIT.usage;
}

/**
 * A reader that stops reading (`| head -1`, `| grep -m1`) closes the pipe: the next write fails
 * with EPIPE, which, unheard, crashed the command with a stack trace on stderr and exit 1, and a
 * `tail -f` must end then rather than follow for nobody. Ended quietly, exit 0, as the shell's
 * own tools do. Not for `serve`: its stdout is a connection (or its log), which handles its own.
 */
function endWhenTheReaderLeaves(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(EXIT.ok);
    process.stderr.write(`herrscher-state: cannot write the output: ${err.message}\n`);
    process.exit(EXIT.failed);
  });
}

async function main(argv: string[]): Promise<number> {
  // Compiled from source this time (V8 never saw the damaged data): written again at exit.
  if (codeCacheDamaged()) (await import('./commands/code-cache-rewrite.js')).rewriteCodeCacheAtExit();
  const [first, ...rest] = argv;
  if (first !== 'serve') endWhenTheReaderLeaves();
  if (first === undefined) {
    process.stderr.write(globalHelp(COMMANDS));
    return EXIT.usage;
  }
  if (first === '--help' || first === '-h') {
    process.stdout.write(globalHelp(COMMANDS));
    return EXIT.ok;
  }
  if (first === '--version' || first === '-v') {
    process.stdout.write(`${version()}\n`);
    return EXIT.ok;
  }
  if (first === 'help') {
    const topic = rest[0] === undefined ? undefined : COMMANDS.find((c) => c.name === rest[0]);
    if (rest[0] !== undefined && !topic) return unknownCommand(rest[0]);
    process.stdout.write(topic ? commandHelp(topic) : globalHelp(COMMANDS));
    return EXIT.ok;
  }
  const cmd = COMMANDS.find((c) => c.name === first);
  if (!cmd) return unknownCommand(first);
  try {
    const parsed = parseCommandLine(cmd, rest);
    if (parsed.help) {
      process.stdout.write(commandHelp(cmd));
      return EXIT.ok;
    }
    return await cmd.run(parsed.flags, parsed.positionals);
  } catch (err) {
    if (err instanceof UsageError) return usageError(err.message, cmd);
    // The server could not be reached or went away: the command's own failure, not a crash.
    process.stderr.write(`herrscher-state ${cmd.name}: ${(err as Error).message}\n`);
    return EXIT.failed;
  }
}

function unknownCommand(word: string): number {
  if (word.startsWith('-')) return usageError(`${word} goes after a command, e.g. herrscher-state serve ${word}`);
  const near = suggest(word, COMMANDS.map((c) => c.name).concat('help'));
  return usageError(`unknown command ${JSON.stringify(word)}${near ? `; did you mean ${near}?` : ''}`);
}

// Not a top-level await: the bundle is a script (src/cli.ts runs it from V8's code cache), where
// there is none.
void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
