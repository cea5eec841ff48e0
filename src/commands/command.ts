// What one CLI command is: its name, help (summary, usage, arguments, flags, examples) and how it
// runs. Each command lives in its own `<name>-command.ts`; cli-main.ts only lists them and routes, so
// adding a command or a flag is a change to one file.

/** One `--flag`. `value` names its argument in help (`--state FILE`); booleans take none. */
export interface FlagSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  readonly value?: string;
  readonly default?: string;
  readonly help: string;
}

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** The parsed flags of a command, typed from its specs: a flag with a default is always a string. */
export type FlagValues<F extends FlagSpecs> = {
  [K in keyof F]: F[K] extends { type: 'boolean' } ? boolean | undefined : F[K] extends { default: string } ? string : string | undefined;
};

export interface Example {
  readonly command: string;
  /** What it does, one line. */
  readonly says: string;
}

export interface Command<F extends FlagSpecs = FlagSpecs> {
  readonly name: string;
  /** One line, shown in the command list of `herrscher-state --help`. */
  readonly summary: string;
  /** Synopsis lines without the program name, e.g. `tail NAME [-n N] [-f]`. */
  readonly usage: readonly string[];
  /** Paragraphs after the synopsis: what the command does, where it differs from the obvious. */
  readonly description?: string;
  readonly args?: readonly { readonly name: string; readonly help: string }[];
  readonly flags: F;
  readonly examples: readonly Example[];
  /** Runs the command; resolves with the exit code. Throws UsageError for a bad command line (exit 2). */
  run(flags: FlagValues<F>, positionals: string[]): Promise<number>;
}

/** Keeps the flag types of one command while the router sees them all as `Command`. */
export function defineCommand<const F extends FlagSpecs>(c: Command<F>): Command {
  return c as unknown as Command;
}

/** A command line that cannot run: printed with a pointer to the command's help, exit 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Exit codes every command shares. `locked`: `serve` found the state's lock held by another
 * process (a lost race for it, or a server already running); `inUse`: `serve --shared` found
 * another live shared server on its socket (a lost start race). A program that starts servers
 * tells these cases from every other failure by the code, never by the words (clients/go/state).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, locked: 3, inUse: 4 } as const;
