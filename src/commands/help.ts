// Help text, rendered from the command definitions: `herrscher-state --help` lists the commands,
// `herrscher-state COMMAND --help` shows one command's usage, flags and examples.
import type { Command, FlagSpec } from './command.js';
import { HELP_FLAG } from './command-line.js';

const PROGRAM = 'herrscher-state';
/** The column where a flag's help starts. */
const HELP_COLUMN = 28;

/** Environment variables the CLI reads, shown in the global help. */
export const ENVIRONMENT: readonly { name: string; help: string }[] = [
  { name: 'HERRSCHER_STATE_DIR', help: 'the state dir when --state is not given (state.json inside it)' },
  { name: 'HERRSCHER_STATE_SOCKET', help: 'the socket to serve or to reach when --socket is not given' },
  { name: 'XDG_RUNTIME_DIR', help: 'the default socket folder is $XDG_RUNTIME_DIR/herrscher-state/ when set,' },
  { name: 'TMPDIR', help: 'else $TMPDIR/herrscher-state-<uid>/' },
];

export const EXIT_CODES: readonly { code: number; help: string }[] = [
  { code: 0, help: 'done' },
  { code: 1, help: 'failed: the server answered an error, could not be reached or went away,\nthe state could not be opened, (tail) there is no such session,\n(status) the server is unhealthy, (verify) a problem was found,\nor (restore) the restore was refused' },
  { code: 2, help: 'the command line is wrong (unknown command or flag, bad value)' },
  { code: 3, help: '(serve) another process holds the state\'s single-writer lock: a server\nalready serving it; (backup) no server answered, yet one holds the lock' },
  { code: 4, help: '(serve --shared) another shared server serves the socket already, or\nis starting or stopping there (a lost start race: use that one); its\nsocket was left untouched' },
];

function column(left: string, help: string, at = HELP_COLUMN): string {
  const pad = left.length + 2 > at ? `\n${' '.repeat(at)}` : ' '.repeat(at - left.length);
  return `${left}${pad}${help.replace(/\n/g, `\n${' '.repeat(at)}`)}`;
}

function flagLine(name: string, f: FlagSpec): string {
  const left = `  ${f.short ? `-${f.short}, ` : '    '}--${name}${f.type === 'string' ? ` ${f.value ?? 'VALUE'}` : ''}`;
  return column(left, f.default !== undefined ? `${f.help} (default ${f.default})` : f.help);
}

export function commandHelp(cmd: Command): string {
  const out = [`${PROGRAM} ${cmd.name} — ${cmd.summary}`, '', 'Usage:', ...cmd.usage.map((u) => `  ${PROGRAM} ${u}`)];
  if (cmd.description) out.push('', cmd.description);
  if (cmd.args?.length) out.push('', 'Arguments:', ...cmd.args.map((a) => column(`  ${a.name}`, a.help)));
  out.push('', 'Flags:', ...Object.entries(cmd.flags).map(([n, f]) => flagLine(n, f)), flagLine('help', HELP_FLAG));
  if (cmd.examples.length) {
    out.push('', 'Examples:');
    for (const e of cmd.examples) out.push(`  ${e.command}`, `      ${e.says}`);
  }
  return `${out.join('\n')}\n`;
}

export function globalHelp(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    `${PROGRAM} — the single writer of a Herrscher state dir, served over JSON-RPC`,
    '',
    'Usage:',
    ...commands.flatMap((c) => c.usage.map((u) => `  ${PROGRAM} ${u}`)),
    `  ${PROGRAM} --help | --version`,
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    `Run ${PROGRAM} COMMAND --help for a command's flags and examples.`,
    '',
    'Environment:',
    ...ENVIRONMENT.map((e) => column(`  ${e.name}`, e.help)),
    '',
    'Exit codes:',
    ...EXIT_CODES.map((e) => column(`  ${e.code}`, e.help, 6)),
    '',
    'Methods and their params: herrscher-state call rpc.discover, or schema/openrpc.json.',
    '',
  ].join('\n');
}
