// The README's two commands, run as written in a fresh clone of this repo's HEAD: the lines are
// read from the README's "Two commands" block, so an edit there is what gets tested. `npm start`
// must come up, print a `call` line that works as printed, and stop with its server on SIGTERM,
// SIGINT or SIGHUP sent to npm's own process (npm forwards only the first two; `serve
// --exit-with-parent` covers the third). `npm test` must pass in the clone.
//
// Slow (an npm install and a whole `npm test`), so not in `npm test`'s glob: `npm run
// test:install`, which .ci/run runs.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { REPO } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 600_000;

/** The two command lines of the README's "Two commands" block, comments stripped. */
function readmeCommands(): { start: string; test: string } {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const block = /## Two commands\s+```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, 'the README has a "Two commands" sh block');
  const lines = block
    .split('\n')
    .map((l) => l.replace(/#.*$/, '').trim())
    .filter(Boolean);
  const start = lines.find((l) => l.endsWith('npm start'));
  const testLine = lines.find((l) => l.endsWith('npm test'));
  assert.ok(start && testLine, `the block names npm start and npm test:\n${block}`);
  return { start, test: testLine };
}

/** `a && b && c` → its steps; the last one is the long-running one. */
function steps(line: string): string[] {
  return line.split('&&').map((s) => s.trim());
}

/** The environment a person's shell has: without the test runner's marker, which would make a nested `node --test` report to this one instead of running. */
function userEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

function run(cmd: string, cwd: string): void {
  const r = spawnSync('sh', ['-c', cmd], { cwd, encoding: 'utf8', env: userEnv(), maxBuffer: 256 * 1024 * 1024 });
  assert.equal(r.status, 0, `${cmd} failed (${r.status}):\n${failures(r.stdout) || r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`);
}

/** The failed tests of a TAP report, each with the lines that follow it up to its end marker. */
function failures(tap: string): string {
  const lines = tap.split('\n');
  const out: string[] = [];
  lines.forEach((l, i) => {
    if (!/^\s*not ok /.test(l)) return;
    const end = lines.findIndex((m, j) => j > i && /^\s*\.\.\.$/.test(m));
    out.push(...lines.slice(i, end === -1 ? i + 30 : Math.min(end, i + 40)));
  });
  return out.join('\n').slice(0, 20_000);
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(what: string, ok: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("the README's two commands work in a fresh clone", { timeout: TIMEOUT }, async (t) => {
  const root = tempDir();
  const clone = path.join(root, 'clone');
  execFileSync('git', ['clone', '-q', REPO, clone]);
  const { start, test: testLine } = readmeCommands();
  const startSteps = steps(start);
  const npmStart = startSteps.pop() as string;
  for (const s of startSteps) run(s, clone);

  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    await t.test(`npm start serves, its call line works, and ${signal} to npm stops the server`, async () => {
      const [cmd, ...args] = npmStart.split(/\s+/) as [string, ...string[]];
      const npm = spawn(cmd, args, { cwd: clone, env: userEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      npm.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      npm.stdout.resume();
      try {
        await waitFor('the call line', () => /^try: (.+)$/m.test(err), 120_000);
        const callLine = (/^try: (.+)$/m.exec(err) as RegExpExecArray)[1] as string;
        const call = spawnSync('sh', ['-c', callLine], { cwd: clone, env: userEnv(), encoding: 'utf8', timeout: 30_000 });
        assert.equal(call.status, 0, `${callLine}\n${call.stdout}\n${call.stderr}`);
        assert.deepEqual(JSON.parse(call.stdout), { sessions: [] });

        const record = path.join(clone, '.state-dev/.herrscher-state/state.json.serving.json');
        const served = JSON.parse(readFileSync(record, 'utf8')) as { pid: number; socket: string };
        assert.ok(pidAlive(served.pid));
        npm.kill(signal);
        await exited(npm);
        await waitFor(`the server (pid ${served.pid}) to stop after ${signal}`, () => !pidAlive(served.pid), 10_000);
        assert.equal(existsSync(served.socket), false, 'the socket is removed');
        assert.equal(existsSync(record), false, 'the server record is removed');
      } finally {
        npm.kill('SIGKILL');
      }
    });
  }

  await t.test('npm test passes', () => {
    for (const s of steps(testLine)) run(s, clone);
  });
});
