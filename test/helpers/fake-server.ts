// Starts test/fixtures/fake-server.mjs (a server that misbehaves in one chosen way) on a socket
// in a fresh private temp dir; it is killed when the test ends.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Ctx } from './cli.js';
import { tempDir } from './temp-dir.js';

export const FAKE_SERVER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/fake-server.mjs');

export type FakeMode =
  | 'garbage' | 'huge' | 'silent' | 'close-mid-reply' | 'wrong-id' | 'null-id' | 'non-object' | 'array' | 'list-id' | 'deep-array' | 'echo';

/** The socket of a fake server in `mode`, once it listens. */
export async function startFakeServer(t: Ctx, mode: FakeMode, opts: { ok?: number } = {}): Promise<string> {
  const socket = path.join(tempDir('hs-fake-'), 'fake.sock');
  const child = spawn(process.execPath, [FAKE_SERVER, '--socket', socket, '--mode', mode, '--ok', String(opts.ok ?? 0)], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('listening')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the fake server exited (${String(code)}) before listening`)));
  });
  return socket;
}
