// Starts test/fixtures/fake-server.mjs (a server that misbehaves in one chosen way per socket).
// One process per test file serves every mode (`--dir`, each mode on DIR/MODE.sock, each
// connection misbehaving on its own), started by the file's first test that asks for one and
// killed when the file ends: a file testing many modes starts one node instead of one per mode.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { atFileEnd } from './file-end.js';
import { tempDir } from './temp-dir.js';

export const FAKE_SERVER = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/fake-server.mjs');

export type FakeMode =
  | 'garbage' | 'huge' | 'silent' | 'close-mid-reply' | 'wrong-id' | 'null-id' | 'non-object' | 'array' | 'list-id' | 'deep-array'
  | 'no-result' | 'null-error' | 'string-error' | 'bad-error-code' | 'echo';

/** The current file's fake server: the dir its sockets are in, once it listens. */
let running: Promise<string> | undefined;

/** The socket of the current file's fake server that misbehaves as `mode`, once it listens. */
export async function fakeServerSocket(mode: FakeMode): Promise<string> {
  running ??= startFakeServers();
  return path.join(await running, `${mode}.sock`);
}

async function startFakeServers(): Promise<string> {
  const dir = tempDir('hs-fake-');
  const child = spawn(process.execPath, [FAKE_SERVER, '--dir', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  // Registered after tempDir's removal of the dir, so it runs first (newest first).
  atFileEnd(() => {
    running = undefined;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('listening')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the fake server exited (${String(code)}) before listening`)));
  }).catch((err: unknown) => {
    running = undefined;
    throw err;
  });
  return dir;
}
