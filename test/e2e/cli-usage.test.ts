// The usage lines `herrscher-state --help` prints are complete: each names every flag its command
// takes (serve's many options stand as `[options]`, listed by `serve --help`).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callCommand } from '../../src/commands/call-command.js';
import { sessionsCommand } from '../../src/commands/sessions-command.js';
import { socketCommand } from '../../src/commands/socket-command.js';
import { statusCommand } from '../../src/commands/status-command.js';
import { tailCommand } from '../../src/commands/tail-command.js';

for (const cmd of [callCommand, tailCommand, sessionsCommand, statusCommand, socketCommand]) {
  test(`${cmd.name}'s usage line names every flag it takes`, () => {
    const usage = cmd.usage.join('\n');
    const missing = Object.entries(cmd.flags as Record<string, { short?: string }>)
      .filter(([name, f]) => !usage.includes(`--${name}`) && !(f.short && new RegExp(`-${f.short}\\b`).test(usage)))
      .map(([name]) => `--${name}`);
    assert.deepEqual(missing, [], `${cmd.usage.join(' ')}`);
  });
}
