// Parses one command's arguments against its flag specs. An unknown flag is a UsageError that
// names the closest known flag of that command.
import { parseArgs } from 'node:util';
import type { Command, FlagSpecs, FlagValues } from './command.js';
import { UsageError } from './command.js';
import { suggest } from './suggest.js';

/** Every command takes --help (-h). */
export const HELP_FLAG = { type: 'boolean', short: 'h', help: 'print this help and exit' } as const;

export interface Parsed {
  flags: FlagValues<FlagSpecs>;
  positionals: string[];
  help: boolean;
}

export function parseCommandLine(cmd: Command, argv: string[]): Parsed {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; default?: string }> = { help: HELP_FLAG };
  for (const [name, f] of Object.entries(cmd.flags)) {
    options[name] = { type: f.type, ...(f.short ? { short: f.short } : {}), ...(f.default !== undefined ? { default: f.default } : {}) };
  }
  try {
    const { values, positionals } = parseArgs({ args: joinNegativeValues(cmd, argv), options, allowPositionals: true, strict: true });
    const { help, ...flags } = values as Record<string, string | boolean | undefined>;
    return { flags: flags as FlagValues<FlagSpecs>, positionals, help: help === true };
  } catch (err) {
    throw new UsageError(explain(cmd, err as Error & { code?: string }));
  }
}

/**
 * `-n -1` → `--lines=-1`: node:util takes a value that starts with a dash for a flag ("ambiguous"),
 * so the command's own check never saw it and the operator read "needs a value". A negative
 * number after a flag that takes a value is that value (no flag of ours is a dash and a digit).
 */
function joinNegativeValues(cmd: Command, argv: string[]): string[] {
  const takesValue = new Map<string, string>();
  for (const [name, f] of Object.entries(cmd.flags)) {
    if (f.type !== 'string') continue;
    takesValue.set(`--${name}`, name);
    if (f.short) takesValue.set(`-${f.short}`, name);
  }
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') return out.concat(argv.slice(i));
    const name = takesValue.get(arg);
    const next = argv[i + 1];
    if (name !== undefined && next !== undefined && /^-\d/.test(next)) {
      out.push(`--${name}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/** node:util's messages, reworded for an operator, with a did-you-mean for an unknown flag. */
function explain(cmd: Command, err: Error & { code?: string }): string {
  const quoted = /'(-[^']*)'/.exec(err.message)?.[1];
  if (!quoted) return err.message;
  // `--state <value>`, `-n, --lines <value>`, `--folow=x`: the long name when there is one.
  const name = /--([^\s=,]+)/.exec(quoted)?.[1];
  const shown = name ? `--${name}` : quoted;
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const near = name ? suggest(name, Object.keys(cmd.flags).concat('help')) : undefined;
    return `unknown flag ${shown} for ${cmd.name}${near ? `; did you mean --${near}?` : ''}`;
  }
  if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const spec = name ? cmd.flags[name] : undefined;
    return spec?.type === 'boolean' ? `${shown} takes no value` : `${shown} needs a value${spec?.value ? ` (${spec.value})` : ''}`;
  }
  return err.message;
}
