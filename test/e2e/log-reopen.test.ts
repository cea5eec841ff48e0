// Log rotation: logrotate renames --log-file and sends SIGUSR2; the server opens the file again at
// its path ("log reopened" is the new file's first line of its own) and goes on serving. No line
// is lost: the old file and the new one together hold each line once.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, renameSync, statSync, watch, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { serveSocket } from '../helpers/cli.js';
import { statePathIn, tempDir } from '../helpers/temp-dir.js';

const TIMEOUT = 30_000;

type Line = { msg?: string; signal?: string };
/** The complete lines of `file` (one being written has no "\n" yet), parsed. */
const lines = (file: string): Line[] =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(0, -1).map((l) => JSON.parse(l) as Line) : [];

/** Resolves once `file` holds a line with message `msg` (the folder is watched, and looked at after each event). */
function lineIn(file: string, msg: string): Promise<void> {
  return new Promise((resolve) => {
    const has = (): boolean => lines(file).some((l) => l.msg === msg);
    const w = watch(path.dirname(file), () => {
      if (!has()) return;
      w.close();
      resolve();
    });
    if (has()) {
      w.close();
      resolve();
    }
  });
}

test('SIGUSR2 reopens --log-file after a rename: the next lines go to a new 0600 file at the path, none lost', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const log = path.join(dir, 'logs', 'server.log');
  const server = await serveSocket(t, statePathIn(dir), path.join(dir, 's.sock'), ['--log-file', log, '--log-format', 'json']);
  await lineIn(log, 'serving');
  const rotated = `${log}.1`;
  renameSync(log, rotated);
  server.child.kill('SIGUSR2');
  await lineIn(log, 'log reopened');
  assert.equal(statSync(log).mode & 0o777, 0o600);
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
  const before = lines(rotated).map((l) => l.msg);
  const after = lines(log).map((l) => l.msg);
  assert.deepEqual(before, ['serving']);
  assert.deepEqual(after, ['log reopened', 'stopping', 'stopped']);
});

test('SIGUSR2 without --log-file is logged and changes nothing: the server goes on and stops in order', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const server = await serveSocket(t, statePathIn(dir), path.join(dir, 's.sock'), ['--log-format', 'json']);
  server.child.kill('SIGUSR2');
  await new Promise<void>((resolve) => {
    const check = (): void => {
      if (!server.stderr().includes('no --log-file to reopen')) return;
      server.child.stderr?.off('data', check);
      resolve();
    };
    server.child.stderr?.on('data', check);
    check();
  });
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
});

test('SIGUSR2 when the log folder cannot be made again says so on stderr (the old file, rotated away, is read by no one) and the server goes on', { timeout: TIMEOUT }, async (t) => {
  const dir = tempDir();
  const log = path.join(dir, 'logs', 'server.log');
  const server = await serveSocket(t, statePathIn(dir), path.join(dir, 's.sock'), ['--log-file', log, '--log-format', 'json']);
  await lineIn(log, 'serving');
  renameSync(path.join(dir, 'logs'), path.join(dir, 'logs.old'));
  writeFileSync(path.join(dir, 'logs'), 'a file where the log folder was');
  server.child.kill('SIGUSR2');
  await new Promise<void>((resolve) => {
    const check = (): void => {
      if (!server.stderr().includes('reopening the log file')) return;
      server.child.stderr?.off('data', check);
      resolve();
    };
    server.child.stderr?.on('data', check);
    check();
  });
  assert.match(server.stderr(), new RegExp(`SIGUSR2: reopening the log file ${log.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} failed: .*the log goes on to the file that was open`));
  server.child.kill('SIGTERM');
  assert.deepEqual(await server.exited, { code: 0, signal: null });
  assert.deepEqual(lines(path.join(dir, 'logs.old', 'server.log')).map((l) => l.msg), ['serving', 'reopening the log file failed: the log goes on to the file that was open', 'stopping', 'stopped']);
});
