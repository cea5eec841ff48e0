// The stdio transport in a real child process, as the Herrscher host spawns the server.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { bounded, FrameCollector, lsp, ndjson, request } from './frames.js';

const fixture = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'stdio-echo-server.mjs');

function spawnServer() {
  const child = spawn(process.execPath, [fixture], { stdio: ['pipe', 'pipe', 'pipe'] });
  const stderr: Buffer[] = [];
  child.stderr.on('data', (c: Buffer) => stderr.push(c));
  return { child, stderr: () => Buffer.concat(stderr).toString() };
}

for (const framing of ['ndjson', 'lsp'] as const) {
  test(`stdio in ${framing} framing writes only frames to stdout, other output goes to stderr`, bounded, async () => {
    const { child, stderr } = spawnServer();
    const exited = once(child, 'exit') as Promise<[number | null]>;
    const replies = new FrameCollector(child.stdout, framing);
    const frame = framing === 'ndjson' ? ndjson : lsp;
    child.stdin.write(frame(request(1, { via: 'stdio' })));
    child.stdin.write(frame(request(2, { via: 'stdio' })));
    let got;
    try {
      got = await replies.take(2);
    } finally {
      child.stdin.end();
    }
    const [code] = await exited;
    assert.equal(code, 0);
    assert.deepEqual(got.map((r) => r.id), [1, 2]);
    assert.doesNotMatch(replies.raw, /noise/);
    // Everything on stdout parsed as frames: re-encoding them gives the bytes back.
    assert.equal(replies.raw, got.map((r) => frame(JSON.stringify(r))).join(''));
    assert.match(stderr(), /noise from console\.log/);
    assert.match(stderr(), /noise from process\.stdout\.write/);
  });
}
