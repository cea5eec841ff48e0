// The README's flag tables say what each command's --help says: `serve`'s table lists exactly
// its flags, the shared table exactly the flags every client command has, and every flag any
// command's --help prints is written in the README.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { REPO, runToEnd } from '../helpers/cli.js';

const CLIENT_COMMANDS = ['call', 'tail', 'sessions', 'status', 'socket'] as const;

/** The long flags a --help lists (the flag column, not the prose), -h/--help left out. */
async function helpFlags(command: string): Promise<Set<string>> {
  const got = await runToEnd([command, '--help']);
  assert.equal(got.code, 0, got.stderr);
  const flags = [...`${got.stdout}${got.stderr}`.matchAll(/^ {2}(?:-[a-zA-Z], )?\s*(--[a-z][a-z-]*)/gm)].map((m) => m[1] as string);
  return new Set(flags.filter((f) => f !== '--help'));
}

/** The flags of the README table right after `heading` (the first column of each row). */
function tableFlags(readme: string, heading: string): Set<string> {
  const at = readme.indexOf(heading);
  assert.ok(at >= 0, `README.md has ${heading}`);
  const rows = readme.slice(at).split('\n').slice(1);
  const start = rows.findIndex((l) => l.startsWith('| flag |'));
  const table: string[] = [];
  for (const l of rows.slice(start + 2)) {
    if (!l.startsWith('|')) break;
    table.push(l);
  }
  return new Set(table.map((l) => /^\| `(--[a-z-]+)/.exec(l)?.[1]).filter((f): f is string => f !== undefined));
}

const sorted = (s: Set<string>): string[] => [...s].sort();

test("README.md's flag tables are the commands' --help", { timeout: 120_000 }, async () => {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  assert.deepEqual(sorted(tableFlags(readme, '### `serve [')), sorted(await helpFlags('serve')), "serve's table against serve --help");
  const each = await Promise.all(CLIENT_COMMANDS.map((c) => helpFlags(c)));
  const shared = new Set([...(each[0] ?? [])].filter((f) => each.every((s) => s.has(f))));
  assert.deepEqual(sorted(tableFlags(readme, '### Shared by `call`, `tail`, `sessions`, `status`, `socket`')), sorted(shared), 'the shared table against the flags every client command has');
  for (const [i, c] of CLIENT_COMMANDS.entries()) {
    for (const flag of each[i] ?? []) assert.ok(readme.includes(`\`${flag}`), `${c} --help lists ${flag}, which README.md never mentions`);
  }
});
